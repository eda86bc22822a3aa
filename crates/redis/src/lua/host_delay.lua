-- Gives a host its own politeness delay and holds its next claim at least that long from now:
-- a request to it may have started just before the delay was known. A host already due sooner
-- is moved back.
-- KEYS: 1 host delays hash, 2 host -> earliest start of its next claim, 3 ready zset
-- ARGV: 1 host, 2 delay ms
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local due = now + tonumber(ARGV[2])
if (tonumber(redis.call('HGET', KEYS[2], ARGV[1])) or 0) < due then
  redis.call('HSET', KEYS[2], ARGV[1], due)
  redis.call('ZADD', KEYS[3], 'XX', 'GT', due, ARGV[1])
end
return 1
