-- Ends a claim. 'ack': the task is done. 'release': the task goes back to the front of its
-- host's queue. Either way the host is freed and, if it has more tasks, due again after the
-- politeness delay. A claim that was already requeued (its worker was presumed dead) is stale.
-- KEYS: 1 worker's processing hash, 2 busy hash, 3 ready zset, 4 pending counter
-- ARGV: 1 host queue key prefix, 2 worker, 3 claim token, 4 delay ms, 5 wake channel, 6 mode
-- Returns 1, or 0 for a stale claim.
local task = redis.call('HGET', KEYS[1], ARGV[3])
if not task then return 0 end
redis.call('HDEL', KEYS[1], ARGV[3])
local host = string.match(task, '^[^\n]*\n([^\n]*)\n')
local queue = ARGV[1] .. host
if ARGV[6] == 'release' then
  redis.call('LPUSH', queue, task)
  redis.call('INCR', KEYS[4])
end
if redis.call('HGET', KEYS[2], host) == ARGV[2] then
  redis.call('HDEL', KEYS[2], host)
  if redis.call('LLEN', queue) > 0 then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), host)
    if tonumber(ARGV[4]) == 0 then redis.call('PUBLISH', ARGV[5], 1) end
  end
end
return 1
