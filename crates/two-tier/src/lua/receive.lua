-- Takes up to ARGV[1] frames from the inboxes, starting at inbox ARGV[3] so no sender starves.
-- A frame longer than ARGV[2] bytes is popped but only its length is returned: it never
-- crosses the network. Returns a flat array: inbox index (0-based), frame or length, ...
-- KEYS[1] wake, KEYS[2..] inboxes.
-- The wake list is cleared first: a frame sent after this script rings it again, and frames
-- left behind because the batch was full are picked up by the caller's next call at once.
redis.call('DEL', KEYS[1])
local max = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local n = #KEYS - 1
local out = {}
local taken = 0
for j = 0, n - 1 do
  if taken >= max then break end
  local i = (tonumber(ARGV[3]) + j) % n
  while taken < max do
    local v = redis.call('LPOP', KEYS[i + 2])
    if not v then break end
    taken = taken + 1
    out[#out + 1] = i
    if string.len(v) > limit then
      out[#out + 1] = string.len(v)
    else
      out[#out + 1] = v
    end
  end
end
return out
