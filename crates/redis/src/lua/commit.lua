-- Queues the tasks a finished claim produced and ends those claims, in one atomic step and
-- exactly once per token: the new tasks are queued before the claims end, so "every queue
-- empty and nothing claimed" still means the work is over. A host that already had its budget
-- of tasks queued (ARGV[5], 0 for none) refuses more.
-- KEYS: 1 ready zset, 2 busy hash, 3 id counter, 4 pending counter, 5 commit token key,
--       6 worker's processing hash, 7 queued-per-host hash, 8 acknowledged counter,
--       9 host delays hash (a host's own delay replaces ARGV[6]), 10 host -> earliest start
--       of its next claim (a host is never due before it)
-- ARGV: 1 host queue key prefix, 2 wake channel, 3 token ttl ms, 4 requests per host,
--       5 host budget, 6 delay ms, 7 task count n, 8.. n host, task body pairs, then the
--       claim tokens to acknowledge
-- (the generation key and value follow: see guard.lua)
-- Returns one character per task: '1' queued, '0' refused by its host's budget.
local done = redis.call('GET', KEYS[5])
if done then return done end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[4])
local budget = tonumber(ARGV[5])
local delay = tonumber(ARGV[6])
local n = tonumber(ARGV[7])
local answer = {}
local queued = 0
local woke = 0
for i = 0, n - 1 do
  local host = ARGV[8 + 2 * i]
  local count = redis.call('HINCRBY', KEYS[7], host, 1)
  if budget > 0 and count > budget then
    redis.call('HINCRBY', KEYS[7], host, -1)
    answer[#answer + 1] = '0'
  else
    answer[#answer + 1] = '1'
    local id = redis.call('INCR', KEYS[3])
    local task = string.format('%d', id) .. '\n' .. host .. '\n' .. ARGV[9 + 2 * i]
    redis.call('RPUSH', ARGV[1] .. host, task)
    queued = queued + 1
    if (tonumber(redis.call('HGET', KEYS[2], host)) or 0) < limit then
      local due = math.max(now, tonumber(redis.call('HGET', KEYS[10], host)) or 0)
      woke = woke + redis.call('ZADD', KEYS[1], 'NX', due, host)
    end
  end
end
if queued > 0 then redis.call('INCRBY', KEYS[4], queued) end
local acked = 0
for i = 8 + 2 * n, #ARGV - 1 do
  local task = redis.call('HGET', KEYS[6], ARGV[i])
  if task then
    redis.call('HDEL', KEYS[6], ARGV[i])
    acked = acked + 1
    local host = string.match(task, '^[^\n]*\n([^\n]*)\n')
    if redis.call('HINCRBY', KEYS[2], host, -1) <= 0 then
      redis.call('HDEL', KEYS[2], host)
    end
    if redis.call('LLEN', ARGV[1] .. host) > 0 then
      local d = tonumber(redis.call('HGET', KEYS[9], host)) or delay
      local wake = redis.call('ZADD', KEYS[1], 'NX', now + d, host)
      if d == 0 then woke = woke + wake end
    end
  end
end
if acked > 0 then redis.call('INCRBY', KEYS[8], acked) end
local result = table.concat(answer)
redis.call('SET', KEYS[5], result, 'PX', ARGV[3])
if woke > 0 then redis.call('PUBLISH', ARGV[2], woke) end
return result
