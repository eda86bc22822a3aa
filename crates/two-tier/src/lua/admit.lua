-- Admits frames exactly once: a frame whose seen-marker already exists was delivered before.
-- KEYS: seen_1, pool_1, seen_2, pool_2, ...; ARGV: ttl_ms, number_1, frame_1, number_2, ...
-- Returns 1 (admitted and stored in its pool) or 0 (seen before) per frame.
local out = {}
for i = 1, #KEYS / 2 do
  if redis.call('SET', KEYS[2 * i - 1], '1', 'NX', 'PX', ARGV[1]) then
    redis.call('HSET', KEYS[2 * i], ARGV[2 * i], ARGV[2 * i + 1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
