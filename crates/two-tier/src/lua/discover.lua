-- Adds URLs to URL_pool and rings the pool's wake list. KEYS[1] URL_pool, KEYS[2] wake.
local added = 0
for i = 1, #ARGV, 500 do
  added = added + redis.call('SADD', KEYS[1], unpack(ARGV, i, math.min(i + 499, #ARGV)))
end
if added > 0 and redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('RPUSH', KEYS[2], '1')
end
return added
