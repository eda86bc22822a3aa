-- Delivers frames into one sender's inbox and rings the receiver's wake list.
-- KEYS[1] inbox (inbox:<sender>), KEYS[2] wake; ARGV frames.
for i = 1, #ARGV do
  redis.call('RPUSH', KEYS[1], ARGV[i])
end
-- One element is enough to wake a blocked receiver; more would only pile up.
if redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('RPUSH', KEYS[2], '1')
end
return redis.call('LLEN', KEYS[1])
