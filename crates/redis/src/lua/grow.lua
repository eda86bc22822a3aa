-- Adds a layer to one data key of a growing filter (see segment_store.rs, "Growth").
-- KEYS: 1 the data key
-- ARGV: 1 the filter's generation as 8 big-endian bytes, 2 the layer count the caller saw,
--       3 the key's length in bytes with the new layer
-- Returns the key's layer count after the call; an error if the key is not of this filter.
if redis.call('GETRANGE', KEYS[1], 0, 7) ~= ARGV[1] then
  return redis.error_reply('STORERESET the data key is gone or of another generation')
end
local layers = redis.call('BITFIELD', KEYS[1], 'GET', 'i64', 128)[1]
if layers ~= tonumber(ARGV[2]) then return layers end
-- Zeros for the new layer, allocated at once (SETRANGE past the end pads with zeros).
redis.call('SETRANGE', KEYS[1], tonumber(ARGV[3]) - 1, '\0')
redis.call('BITFIELD', KEYS[1], 'SET', 'i64', 128, layers + 1, 'SET', 'i64', 192, 0,
  'INCRBY', 'i64', 64, 1)
return layers + 1
