-- Checks and inserts items into one data key that has more than one layer: an item found in
-- an older layer is a duplicate and sets nothing; the others are tested and set in the newest
-- layer, one BITFIELD for the reads and one for the writes. Runs atomically, so of clients
-- admitting the same item exactly one is told it is new, and no item already present is
-- copied into the newest layer (which would fill it before its time).
-- KEYS: 1 the data key, 2 the call's stamp key: its connection's counter key on a single
--       Redis, a token key of its own (in the data key's hash slot) on a cluster
-- ARGV: 1 the filter's generation as 8 big-endian bytes, 2 the layer count L the caller
--       planned for, 3 how many items, 4 the stamp's lifetime in ms, 5 the offset of the
--       caller's witness bit (a bit it set, which must still be 1), 6 the call's number (the
--       stamp key holds it once the call ran), 7..6+L the bits per item in each layer
--       (oldest first), then per item its bit offsets in the key, layer after layer.
-- Returns {L, writes, admitted, witness bit, verdict...} with a verdict of 1 (new) or 0 per
-- item;
-- {-1, layers} when the key has another layer count than planned (plan again); {-2} when
-- this call already ran (its reply was lost: the stamp key holds its number).
if redis.call('GET', KEYS[2]) == ARGV[6] then return {-2} end
if redis.call('GETRANGE', KEYS[1], 0, 7) ~= ARGV[1] then
  return redis.error_reply('STORERESET the data key is gone or of another generation')
end
local header = redis.call('BITFIELD', KEYS[1], 'GET', 'i64', 128, 'INCRBY', 'i64', 64, 1,
  'GET', 'u1', ARGV[5])
local L = tonumber(ARGV[2])
if header[1] ~= L then return {-1, header[1]} end
local items = tonumber(ARGV[3])
local ks, per_item = {}, 0
for j = 1, L do
  ks[j] = tonumber(ARGV[6 + j])
  per_item = per_item + ks[j]
end
local older = per_item - ks[L]
local first = 7 + L
-- Reads of every item's older-layer bits, in chunks that keep the argument list short.
local bits = {}
local function flush(args, out)
  if #args > 2 then
    local got = redis.call(unpack(args))
    for i = 1, #got do out[#out + 1] = got[i] end
  end
end
local args = {'BITFIELD_RO', KEYS[1]}
for i = 0, items - 1 do
  for b = 0, older - 1 do
    args[#args + 1] = 'GET'; args[#args + 1] = 'u1'
    args[#args + 1] = ARGV[first + i * per_item + b]
    if #args >= 3000 then flush(args, bits); args = {'BITFIELD_RO', KEYS[1]} end
  end
end
flush(args, bits)
-- An item is in an older layer when all of that layer's bits are set.
local absent, at = {}, 0
for i = 0, items - 1 do
  local found = false
  for j = 1, L - 1 do
    local all = true
    for b = 1, ks[j] do
      at = at + 1
      if bits[at] == 0 then all = false end
    end
    if all then found = true end
  end
  absent[i] = not found
end
-- Writes of the absent items' newest-layer bits, in order, so a repeat sees the first.
local olds = {}
args = {'BITFIELD', KEYS[1]}
for i = 0, items - 1 do
  if absent[i] then
    for b = older, per_item - 1 do
      args[#args + 1] = 'SET'; args[#args + 1] = 'u1'
      args[#args + 1] = ARGV[first + i * per_item + b]; args[#args + 1] = 1
      if #args >= 4000 then flush(args, olds); args = {'BITFIELD', KEYS[1]} end
    end
  end
end
flush(args, olds)
local out, admitted = {L, header[2], 0, header[3]}, 0
at = 0
for i = 0, items - 1 do
  local new = 0
  if absent[i] then
    for b = 1, ks[L] do
      at = at + 1
      if olds[at] == 0 then new = 1 end
    end
  end
  admitted = admitted + new
  out[#out + 1] = new
end
out[3] = redis.call('BITFIELD', KEYS[1], 'INCRBY', 'i64', 192, admitted)[1]
redis.call('SET', KEYS[2], ARGV[6], 'PX', ARGV[4])
return out
