-- Appends tasks to their hosts' queues and marks hosts with a free request slot ready;
-- exactly once per token.
-- KEYS: 1 ready zset, 2 busy hash, 3 id counter, 4 pending counter, 5 push token key,
--       6 host -> earliest start of its next claim (a host is never due before it)
-- ARGV: 1 host queue key prefix, 2 wake channel, 3 token ttl ms, 4 requests per host,
--       5.. host, task body pairs
-- (the generation key and value follow: see guard.lua)
local done = redis.call('GET', KEYS[5])
if done then return tonumber(done) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[4])
local n = (#ARGV - 5) / 2
local last = redis.call('INCRBY', KEYS[3], n)
local first = last - n + 1
local woke = 0
for i = 0, n - 1 do
  local host = ARGV[5 + 2 * i]
  local task = string.format('%d', first + i) .. '\n' .. host .. '\n' .. ARGV[6 + 2 * i]
  redis.call('RPUSH', ARGV[1] .. host, task)
  -- A host at its limit becomes ready again when one of its requests finishes.
  if (tonumber(redis.call('HGET', KEYS[2], host)) or 0) < limit then
    local due = math.max(now, tonumber(redis.call('HGET', KEYS[6], host)) or 0)
    woke = woke + redis.call('ZADD', KEYS[1], 'NX', due, host)
  end
end
redis.call('INCRBY', KEYS[4], n)
redis.call('SET', KEYS[5], string.format('%d', first), 'PX', ARGV[3])
if woke > 0 then redis.call('PUBLISH', ARGV[2], woke) end
return first
