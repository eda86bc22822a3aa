-- Leases the next task of a ready host to a worker: the host leaves the ready set (no other
-- worker can take it) and the task moves into the worker's processing hash under the claim
-- token, so a retried claim returns the same task instead of leasing a second one.
-- KEYS: 1 ready zset, 2 busy hash, 3 worker's processing hash, 4 workers set,
--       5 pending counter, 6 worker's membership key
-- ARGV: 1 host queue key prefix, 2 worker, 3 claim token
-- Returns {1, task}, {0, ms until the next host is due or -1}, or {-1, ''} for a non-member.
local held = redis.call('HGET', KEYS[3], ARGV[3])
if held then return {1, held} end
if redis.call('EXISTS', KEYS[6]) == 0 then return {-1, ''} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
while true do
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)
  if #due == 0 then
    local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    if #nxt == 0 then return {0, -1} end
    return {0, tonumber(nxt[2]) - now}
  end
  local host = due[1]
  redis.call('ZREM', KEYS[1], host)
  local task = redis.call('LPOP', ARGV[1] .. host)
  if task then
    redis.call('HSET', KEYS[2], host, ARGV[2])
    redis.call('HSET', KEYS[3], ARGV[3], task)
    redis.call('SADD', KEYS[4], ARGV[2])
    redis.call('DECR', KEYS[5])
    return {1, task}
  end
end
