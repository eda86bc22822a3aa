-- Ends claims. 'ack': the tasks are done. 'release': each task goes back to the front of its
-- host's queue. Either way each task's host gets its request slot back and, if it has more
-- tasks, is due again after the politeness delay (or keeps the earlier time it was due at). A
-- claim that was already requeued (its worker was presumed dead) is stale.
-- KEYS: 1 worker's processing hash, 2 busy hash, 3 ready zset, 4 pending counter,
--       5 acknowledged counter, 6 host delays hash (a host's own delay replaces ARGV[2])
-- ARGV: 1 host queue key prefix, 2 delay ms, 3 wake channel, 4 mode, 5.. claim tokens
-- (the generation key and value follow: see guard.lua)
-- Returns the number of claims ended (stale ones are not counted).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local delay = tonumber(ARGV[2])
local ended = 0
local woke = 0
for i = 5, #ARGV - 1 do
  local task = redis.call('HGET', KEYS[1], ARGV[i])
  if task then
    redis.call('HDEL', KEYS[1], ARGV[i])
    ended = ended + 1
    local host = string.match(task, '^[^\n]*\n([^\n]*)\n')
    local queue = ARGV[1] .. host
    if ARGV[4] == 'release' then
      redis.call('LPUSH', queue, task)
      redis.call('INCR', KEYS[4])
    end
    if redis.call('HINCRBY', KEYS[2], host, -1) <= 0 then
      redis.call('HDEL', KEYS[2], host)
    end
    if redis.call('LLEN', queue) > 0 then
      local d = tonumber(redis.call('HGET', KEYS[6], host)) or delay
      local added = redis.call('ZADD', KEYS[3], 'NX', now + d, host)
      if d == 0 then woke = woke + added end
    end
  end
end
if ended > 0 and ARGV[4] == 'ack' then redis.call('INCRBY', KEYS[5], ended) end
if woke > 0 then redis.call('PUBLISH', ARGV[3], woke) end
return ended
