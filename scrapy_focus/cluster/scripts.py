"""The Lua scripts of the cluster frontier (:class:`~.frontier.RedisFrontier`).

Each script is the common prologue :data:`LIB` followed by its body, registered once
per client (``client.register_script``: EVALSHA, loaded again by redis-py after a
``NOSCRIPT``, e.g. when Redis restarted).  Every script gets the same calling
convention, so the frontier builds it in one place:

* ``KEYS``: the crawl's fixed keys, in the order of :data:`FIXED_KEYS`;
* ``ARGV[1..8]``: the key prefix, this node's name, and the politeness and lease
  figures (:data:`COMMON_ARGS`); the script's own arguments follow from ``ARGV[9]``.

A host's keys (``q:<host>``, ``host:<host>``, ``inflight:<host>``), a node's lease set
(``node:<node>``) and the seen set's buckets are named in the script from the prefix:
which of them a batch touches is only known inside it.  They carry the crawl's hash
tag, so they live in the slot of the declared keys (Redis Cluster runs such scripts;
the keys are undeclared, which its documentation discourages but does not refuse).

Time is ``redis.call('TIME')``, the one clock all nodes share, and every time or
score written is formatted with microseconds (a Lua number given to ``redis.call``
would be cut to 14 digits).  A host's ``last`` (its last request) is absent until its
first lease; ``placed`` is its member of ``ready`` while it is there.
"""

from __future__ import annotations

from typing import Any

FIXED_KEYS = (
    "seq", "payloads", "ready", "waiting", "leases", "deadlines", "nodes", "counts",
    "quarantine", "seen:buckets", "pending", "entry_seen",
)  # fmt: skip
COMMON_ARGS = (
    "prefix", "node", "in_flight_timeout", "lease_timeout", "lease_deadline",
    "max_host_delay", "base_backoff", "max_backoff",
)  # fmt: skip

LIB = r"""
local P, NODE = ARGV[1], ARGV[2]
local INFLIGHT_TIMEOUT, LEASE_TIMEOUT = tonumber(ARGV[3]), tonumber(ARGV[4])
local LEASE_DEADLINE, MAX_HOST_DELAY = tonumber(ARGV[5]), tonumber(ARGV[6])
local BASE_BACKOFF, MAX_BACKOFF = tonumber(ARGV[7]), tonumber(ARGV[8])
local A = 8
local K_SEQ, K_PAYLOADS, K_READY, K_WAITING = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local K_LEASES, K_DEADLINES, K_NODES, K_COUNTS = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local K_QUARANTINE, K_BUCKETS = KEYS[9], KEYS[10]
local K_PENDING, K_ENTRY_SEEN = KEYS[11], KEYS[12]
local clock = redis.call('TIME')
local NOW = tonumber(clock[1]) + tonumber(clock[2]) / 1e6
local NEVER = -math.huge

local function fmt(x) return string.format('%.6f', x) end
local function num(v, default) return tonumber(v) or default end
local function qkey(host) return P .. ':q:' .. host end
local function hkey(host) return P .. ':host:' .. host end
local function fkey(host) return P .. ':inflight:' .. host end
local function nkey(node) return P .. ':node:' .. node end

local function be64(n)
  local hi, lo = math.floor(n / 4294967296), n % 4294967296
  return string.char(
    math.floor(hi / 16777216) % 256, math.floor(hi / 65536) % 256,
    math.floor(hi / 256) % 256, hi % 256,
    math.floor(lo / 16777216) % 256, math.floor(lo / 65536) % 256,
    math.floor(lo / 256) % 256, lo % 256)
end
local function new_key(rank) return rank .. be64(redis.call('INCR', K_SEQ)) end
-- *a* sorts before *b* byte-wise, as a sorted set orders its members (Lua's own
-- string order follows the locale)
local function precedes(a, b)
  for j = 1, math.min(#a, #b) do
    local x, y = string.byte(a, j), string.byte(b, j)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- an entry's seen member (its fingerprint's, seen.py) and the member's entry, from
-- push to acknowledgement, so a link found again can move its entry up (rescoring.py)
local function index(key, member)
  redis.call('HSET', K_ENTRY_SEEN, key, member)
  redis.call('HSET', K_PENDING, member, key)
end
local function unindex(key)
  local member = redis.call('HGET', K_ENTRY_SEEN, key)
  if not member then return end
  redis.call('HDEL', K_ENTRY_SEEN, key)
  if redis.call('HGET', K_PENDING, member) == key then redis.call('HDEL', K_PENDING, member) end
end
-- an entry under a new key, with *payload* (nil: its own)
local function move_entry(old, new, payload)
  redis.call('HSET', K_PAYLOADS, new, payload or redis.call('HGET', K_PAYLOADS, old) or '')
  redis.call('HDEL', K_PAYLOADS, old)
  local member = redis.call('HGET', K_ENTRY_SEEN, old)
  if not member then return end
  redis.call('HDEL', K_ENTRY_SEEN, old)
  redis.call('HSET', K_ENTRY_SEEN, new, member)
  if redis.call('HGET', K_PENDING, member) == old then
    redis.call('HSET', K_PENDING, member, new)
  end
end
-- the queued entry of seen *member* moved up to *rank* with *payload*: 1, or 0 when it
-- is queued at or above that rank or with another priority, -1 when it is not queued
-- (leased, done, or pushed before this index existed); its host is to be placed
local function raise(member, host, rank, payload)
  local old = redis.call('HGET', K_PENDING, member)
  if not old or not redis.call('ZSCORE', qkey(host), old) then return -1 end
  if string.sub(old, 1, 4) ~= string.sub(rank, 1, 4) or not precedes(rank, string.sub(old, 1, 8))
  then return 0 end
  local new = new_key(rank)
  redis.call('ZREM', qkey(host), old)
  redis.call('ZADD', qkey(host), 0, new)
  move_entry(old, new, payload)
  return 1
end

-- a lease record: node, host, dispatch time, the host's last before the lease
local function split(rec)
  local p = {}
  for part in string.gmatch(rec .. '\n', '([^\n]*)\n') do p[#p + 1] = part end
  return p[1], p[2], p[3], p[4]
end
local function drop_lease(key, node)
  redis.call('HDEL', K_LEASES, key)
  redis.call('ZREM', K_DEADLINES, key)
  redis.call('SREM', nkey(node), key)
end
-- a lease that did not reach the network gives its turn back, unless a later one took it
local function give_turn_back(hk, at, before)
  if redis.call('HGET', hk, 'last') ~= at then return end
  if before == '' then return redis.call('HDEL', hk, 'last') end
  redis.call('HSET', hk, 'last', before)
end
local function count(host, n)
  local field = 'queued'
  if redis.call('HEXISTS', hkey(host), 'held') == 1 then field = 'held' end
  redis.call('HINCRBY', K_COUNTS, field, n)
end
local function ensure(host, delay, concurrency)
  redis.call('HSETNX', hkey(host), 'delay', delay)
  redis.call('HSETNX', hkey(host), 'concurrency', concurrency)
end

local function unplace(host)
  local placed = redis.call('HGET', hkey(host), 'placed')
  if placed then
    redis.call('ZREM', K_READY, placed)
    redis.call('HDEL', hkey(host), 'placed')
  else
    redis.call('ZREM', K_WAITING, host)
  end
end

-- the host's best entry key (nil: none), setting aside the members no node wrote
local function best_of(host)
  local best = redis.call('ZRANGE', qkey(host), 0, 0)[1]
  while best and #best ~= 16 do
    redis.call('ZREM', qkey(host), best)
    redis.call('HDEL', K_PAYLOADS, best)
    redis.call('LPUSH', K_QUARANTINE, cjson.encode({host = host, size = #best,
                                                    reason = 'not an entry key'}))
    best = redis.call('ZRANGE', qkey(host), 0, 0)[1]
  end
  return best
end

-- when the host may have its next lease, by frontier/politeness.py's rule
local function ready_at(host, f)
  local fk = fkey(host)
  local limit = num(f[2], 1)
  if redis.call('ZCARD', fk) >= limit then
    redis.call('ZREMRANGEBYSCORE', fk, '-inf', fmt(NOW - INFLIGHT_TIMEOUT))
    if redis.call('ZCARD', fk) >= limit then
      return tonumber(redis.call('ZRANGE', fk, 0, 0, 'WITHSCORES')[2]) + INFLIGHT_TIMEOUT
    end
  end
  return math.max(num(f[3], NEVER) + num(f[1], 0), num(f[4], NEVER))
end

-- a host whose next turn (at, by ready_at) is only its delay after its last request:
-- not a full in-flight count, not a backoff beyond that, not held
local function reservable(host, f, at)
  local delay = num(f[1], 0)
  return not f[5] and at - NOW <= delay and redis.call('ZCARD', fkey(host)) < num(f[2], 1)
end

-- parked nodes (link.py) wait on the list P:wake: one token tells one of them that a
-- host can be leased now or reserved, which this call will not take
local LEASABLE = false  -- a host placed in this call can
local function signal()
  if not LEASABLE or redis.call('LLEN', P .. ':wake') > 0 then return end
  redis.call('RPUSH', P .. ':wake', 1)
end
-- nothing leased and nothing queued: every node may be done, resting ones included,
-- so each gets a token
local function signal_done()
  if redis.call('HLEN', K_LEASES) > 0 or num(redis.call('HGET', K_COUNTS, 'queued'), 0) > 0 then
    return
  end
  for _ = redis.call('LLEN', P .. ':wake') + 1, redis.call('ZCARD', K_NODES) do
    redis.call('RPUSH', P .. ':wake', 1)
  end
end

-- put host in ready (its best entry first) or waiting (by the time it is ready), or
-- neither (held, or nothing queued); a host is in ready exactly when it has 'placed'
local function place(host)
  local hk = hkey(host)
  local f = redis.call('HMGET', hk, 'delay', 'concurrency', 'last', 'backoff_until', 'held',
                       'placed')
  local placed, best = f[6], nil
  if not f[5] then best = best_of(host) end
  local at = best and ready_at(host, f)
  if at and at <= NOW then
    LEASABLE = true
    local member = best .. host
    if placed == member then return end
    if placed then redis.call('ZREM', K_READY, placed) else redis.call('ZREM', K_WAITING, host) end
    redis.call('ZADD', K_READY, 0, member)
    redis.call('HSET', hk, 'placed', member)
    return
  end
  if placed then
    redis.call('ZREM', K_READY, placed)
    redis.call('HDEL', hk, 'placed')
  end
  if at then
    LEASABLE = LEASABLE or reservable(host, f, at)
    redis.call('ZADD', K_WAITING, fmt(at), host)
  elseif not placed then
    redis.call('ZREM', K_WAITING, host)
  end
end

local function hold(host, why)
  if redis.call('HSETNX', hkey(host), 'held', why) == 0 then return end
  local n = redis.call('ZCARD', qkey(host))
  redis.call('HINCRBY', K_COUNTS, 'queued', -n)
  redis.call('HINCRBY', K_COUNTS, 'held', n)
  unplace(host)
end

-- a lease back to its host's queue, with its key (its place); the host, or nil
-- (of *owner*'s when given); an index entry without its lease is dropped.  *silent*:
-- its node fell silent, so a request in flight may have reached the host and nobody
-- will say when it ended: the host's delay counts from now
local function give_back(key, owner, silent)
  local node, host = split(redis.call('HGET', K_LEASES, key) or '')
  if owner and node ~= owner then redis.call('SREM', nkey(owner), key) end
  if node == '' then redis.call('ZREM', K_DEADLINES, key) end
  if node == '' or (owner and node ~= owner) then return nil end
  drop_lease(key, node)
  if redis.call('ZREM', fkey(host), key) == 1 and silent then
    local hk = hkey(host)
    local f = redis.call('HMGET', hk, 'delay', 'last')
    if num(f[1], 0) > 0 and NOW > num(f[2], NEVER) then redis.call('HSET', hk, 'last', fmt(NOW)) end
  end
  redis.call('ZADD', qkey(host), 0, key)
  count(host, 1)
  return host
end

local function place_all(hosts) for host in pairs(hosts) do place(host) end end
"""

# ARGV after the common ones: the seen set's bucket count, alone (as RELEASE's), then
# per item member, bucket source, host, rank, payload, delay, concurrency, force (1:
# queued even if seen).  Returns per item 1 (queued), 0 (seen before) or 2 (seen
# before and still queued below this rank: moved up with this payload, as a link
# found again on the node that queued it is, rescoring.py).
PUSH = r"""
local buckets = tonumber(redis.call('GET', K_BUCKETS) or '')
if not buckets or buckets < 1 then
  redis.call('SET', K_BUCKETS, ARGV[A + 1])
  buckets = tonumber(ARGV[A + 1])
end
local out, touched = {}, {}
for i = A + 3, #ARGV, 8 do
  local host = ARGV[i + 2]
  local bucket = P .. ':seen:' .. (tonumber(ARGV[i + 1]) % buckets)
  if redis.call('SADD', bucket, ARGV[i]) == 1 or ARGV[i + 7] == '1' then
    ensure(host, ARGV[i + 5], ARGV[i + 6])
    local key = new_key(ARGV[i + 3])
    redis.call('ZADD', qkey(host), 0, key)
    redis.call('HSET', K_PAYLOADS, key, ARGV[i + 4])
    index(key, ARGV[i])
    count(host, 1)
    if redis.call('ZRANGE', qkey(host), 0, 0)[1] == key then touched[host] = true end
    out[#out + 1] = 1
  elseif raise(ARGV[i], host, ARGV[i + 3], ARGV[i + 4]) == 1 then
    touched[host] = true
    out[#out + 1] = 2
  else
    out[#out + 1] = 0
  end
end
place_all(touched)
if ARGV[A + 2] == '1' then signal() end
return out
"""

# ARGV: alone (1: no lease of this node follows in its round), then per item key,
# network (1/0), seconds since the request ended.  Returns how many keys had no lease
# (reclaimed).
RELEASE = r"""
local gone, touched = 0, {}
for i = A + 2, #ARGV, 3 do
  local key = ARGV[i]
  local node, host, at, before = split(redis.call('HGET', K_LEASES, key) or '')
  if node ~= NODE then
    gone = gone + 1
  else
    local hk = hkey(host)
    local was = redis.call('ZREM', fkey(host), key)
    if ARGV[i + 1] == '1' then
      local ended = NOW - math.max(0, tonumber(ARGV[i + 2]) or 0)
      if ended > num(redis.call('HGET', hk, 'last'), NEVER) then
        redis.call('HSET', hk, 'last', fmt(ended))
      end
    elseif was == 1 then
      give_turn_back(hk, at, before)
    end
    touched[host] = true
  end
end
place_all(touched)
if ARGV[A + 1] == '1' then signal() end
return gone
"""

# ARGV: alone (as RELEASE's), then keys.  Returns how many had no lease (reclaimed or
# acknowledged before).  The crawl's last lease leaves a token per node on P:wake.
ACK = r"""
local gone, touched = 0, {}
for i = A + 2, #ARGV do
  local key = ARGV[i]
  local node, host = split(redis.call('HGET', K_LEASES, key) or '')
  if node ~= NODE then
    gone = gone + 1
  else
    drop_lease(key, node)
    redis.call('HDEL', K_PAYLOADS, key)
    unindex(key)
    if redis.call('ZREM', fkey(host), key) == 1 then touched[host] = true end
  end
end
place_all(touched)
if ARGV[A + 1] == '1' then signal() end
signal_done()  -- the crawl's last lease
return gone
"""


def register(client: Any) -> dict[str, Any]:
    """Every script of the frontier registered on *client* (EVALSHA, reloaded after a
    NOSCRIPT), by name."""
    from scrapy_focus.cluster import host_scripts, lease_returns, leasing, rescoring

    bodies = {name: globals()[name] for name in ("PUSH", "RELEASE", "ACK")}
    for module, names in (
        (leasing, ("LEASE",)),
        (lease_returns, ("QUARANTINE", "REQUEUE", "RECLAIM", "UNLEASE")),
        (host_scripts, ("BACKOFF", "HOLD", "POLICY", "ITER", "REKEY", "STATUS", "MINE")),
        (rescoring, ("RAISE", "TOP")),
    ):
        bodies.update({name: getattr(module, name) for name in names})
    return {name: client.register_script(LIB + body) for name, body in bodies.items()}
