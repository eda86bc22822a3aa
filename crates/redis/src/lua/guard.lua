-- Put in front of every frontier script. The frontier's generation key is the script's last
-- key and the generation the caller opened is its last argument: a frontier that lost its
-- data (a Redis restarted empty, FLUSHALL) or was re-created must not be used as if it
-- were simply empty, or its tasks would be lost and its crawl would end early.
local generation = redis.call('GET', KEYS[#KEYS])
if generation ~= ARGV[#ARGV] then
  return redis.error_reply('STORERESET the frontier generation is ' .. (generation or 'missing'))
end
