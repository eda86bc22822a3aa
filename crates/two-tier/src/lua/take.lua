-- Moves up to ARGV[1] URLs from URL_pool into the sending set, after dropping the previous
-- batch (the caller calls this only once that batch reached the center).
-- KEYS[1] URL_pool, KEYS[2] sending. Returns the URLs taken.
redis.call('DEL', KEYS[2])
local urls = redis.call('SPOP', KEYS[1], ARGV[1])
for i = 1, #urls, 500 do
  redis.call('SADD', KEYS[2], unpack(urls, i, math.min(i + 499, #urls)))
end
return urls
