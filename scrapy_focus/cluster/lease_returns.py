"""The cluster frontier's scripts that end a lease other than by its acknowledgement.

Quarantine (the entry is not a request: kept aside), requeue (a retry, an escalation:
back in its host's queue under a new key), reclaim (the leases of silent nodes and
those past their hard deadline) and unlease (a node gives back what it will not
fetch).  Each runs after :data:`~.scripts.LIB` with its calling convention (see
:mod:`~.scripts`).
"""

from __future__ import annotations

# ARGV: key, reason record.  Acknowledges the key and keeps the record.  Returns 1 if
# the key was leased.
QUARANTINE = r"""
local key = ARGV[A + 1]
redis.call('LPUSH', K_QUARANTINE, ARGV[A + 2])
redis.call('LTRIM', K_QUARANTINE, 0, tonumber(ARGV[A + 3]) - 1)
local node, host = split(redis.call('HGET', K_LEASES, key) or '')
if node ~= NODE then return 0 end
drop_lease(key, node)
redis.call('HDEL', K_PAYLOADS, key)
unindex(key)
redis.call('ZREM', fkey(host), key)
place(host)
signal()
signal_done()  -- the crawl's last lease, as ACK's
return 1
"""

# ARGV: key, new rank.  Returns the new key, or nil when the lease was gone.
REQUEUE = r"""
local key = ARGV[A + 1]
local node, host, at, before = split(redis.call('HGET', K_LEASES, key) or '')
if node ~= NODE then return false end
drop_lease(key, node)
local hk = hkey(host)
if redis.call('ZREM', fkey(host), key) == 1 then give_turn_back(hk, at, before) end
local new = new_key(ARGV[A + 2])
move_entry(key, new)
redis.call('ZADD', qkey(host), 0, new)
count(host, 1)
place(host)
signal()
return new
"""

# ARGV: beat (1/0), bound.  Returns how many leases went back.  A lease in flight
# may have reached the host and nobody will say when it ended: its host's delay counts
# from now (its request began before its node fell silent, so never from earlier).
RECLAIM = r"""
if ARGV[A + 1] == '1' then redis.call('ZADD', K_NODES, fmt(NOW), NODE) end
local bound, n, touched = tonumber(ARGV[A + 2]), 0, {}
local dead = redis.call('ZRANGEBYSCORE', K_NODES, '-inf', '(' .. fmt(NOW - LEASE_TIMEOUT),
                        'LIMIT', 0, 16)
for _, node in ipairs(dead) do
  if n >= bound then break end
  for _, key in ipairs(redis.call('SRANDMEMBER', nkey(node), bound - n)) do
    local host = give_back(key, node, true)
    if host then touched[host] = true; n = n + 1 end
  end
  if redis.call('SCARD', nkey(node)) == 0 then redis.call('ZREM', K_NODES, node) end
end
if n < bound then
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', K_DEADLINES, '-inf', fmt(NOW),
                                  'LIMIT', 0, bound - n)) do
    local host = give_back(key, nil, true)
    if host then touched[host] = true; n = n + 1 end
  end
end
place_all(touched)
signal()
return n
"""

# ARGV: keys.  Returns how many were this node's leases (given back).
UNLEASE = r"""
local n, touched = 0, {}
for i = A + 1, #ARGV do
  local node, host, at, before = split(redis.call('HGET', K_LEASES, ARGV[i]) or '')
  if node == NODE then
    if redis.call('ZSCORE', fkey(host), ARGV[i]) then give_turn_back(hkey(host), at, before) end
    give_back(ARGV[i], NODE)
    touched[host] = true
    n = n + 1
  end
end
place_all(touched)
signal()
return n
"""
