-- Leases up to one task per claim token to a worker, from the hosts that are due. A host has
-- at most ARGV[3] tasks claimed at once, over all workers, and its claims start at least
-- ARGV[4] ms apart: the per-host politeness budget every process shares. Each task moves into
-- the worker's processing hash under its own token, so a retried claim returns the same
-- tasks instead of leasing more.
-- KEYS: 1 ready zset, 2 busy hash (host -> claims held), 3 worker's processing hash,
--       4 workers set, 5 pending counter, 6 worker's membership key, 7 host delays hash,
--       8 host -> earliest start of its next claim (ms)
-- ARGV: 1 host queue key prefix, 2 worker, 3 requests per host, 4 delay ms (a host's own
--       delay in KEYS[7], from its robots.txt, takes its place), 5.. claim tokens
-- (the generation key and value follow: see guard.lua)
-- Returns {1, {i, task, ...}} (i: the token's position, from 1), {0, ms until the next host
-- is due or -1}, or {-1, ''} for a non-member.
local tokens = #ARGV - 5
if redis.call('HEXISTS', KEYS[3], ARGV[5]) == 1 then
  local out = {}
  for i = 1, tokens do
    local held = redis.call('HGET', KEYS[3], ARGV[4 + i])
    if held then
      out[#out + 1] = i
      out[#out + 1] = held
    end
  end
  return {1, out}
end
if redis.call('EXISTS', KEYS[6]) == 0 then return {-1, ''} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[3])
local delay = tonumber(ARGV[4])
local function host_delay(host)
  return tonumber(redis.call('HGET', KEYS[7], host)) or delay
end
local out = {}
local got = 0
while got < tokens do
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)
  if #due == 0 then break end
  local host = due[1]
  redis.call('ZREM', KEYS[1], host)
  local queue = ARGV[1] .. host
  local held = tonumber(redis.call('HGET', KEYS[2], host)) or 0
  -- A host at its limit (another worker holds its slots) waits for a finish to wake it.
  if held < limit then
    local task = redis.call('LPOP', queue)
    if task then
      held = redis.call('HINCRBY', KEYS[2], host, 1)
      redis.call('HSET', KEYS[8], host, now + host_delay(host))
      got = got + 1
      redis.call('HSET', KEYS[3], ARGV[4 + got], task)
      out[#out + 1] = got
      out[#out + 1] = task
      if held < limit and redis.call('LLEN', queue) > 0 then
        redis.call('ZADD', KEYS[1], now + host_delay(host), host)
      end
    end
  end
end
if got > 0 then
  redis.call('SADD', KEYS[4], ARGV[2])
  redis.call('DECRBY', KEYS[5], got)
  return {1, out}
end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #nxt == 0 then return {0, -1} end
return {0, math.max(tonumber(nxt[2]) - now, 0)}
