-- Gives every task a worker holds back to the front of its host's queue and returns their
-- request slots, unless the worker is still alive and ARGV[3] is not '1'.
-- KEYS: 1 worker's processing hash, 2 busy hash, 3 ready zset, 4 workers set,
--       5 pending counter, 6 worker's membership key
-- ARGV: 1 host queue key prefix, 2 worker, 3 force, 4 wake channel
-- (the generation key and value follow: see guard.lua)
-- Returns the number of tasks requeued, or -1 when the worker is alive.
if ARGV[3] ~= '1' and redis.call('EXISTS', KEYS[6]) == 1 then return -1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held = redis.call('HGETALL', KEYS[1])
local n = 0
for i = 2, #held, 2 do
  local task = held[i]
  local host = string.match(task, '^[^\n]*\n([^\n]*)\n')
  redis.call('LPUSH', ARGV[1] .. host, task)
  if redis.call('HINCRBY', KEYS[2], host, -1) <= 0 then
    redis.call('HDEL', KEYS[2], host)
  end
  redis.call('ZADD', KEYS[3], now, host)
  n = n + 1
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[4], ARGV[2])
if n > 0 then
  redis.call('INCRBY', KEYS[5], n)
  redis.call('PUBLISH', ARGV[4], n)
end
return n
