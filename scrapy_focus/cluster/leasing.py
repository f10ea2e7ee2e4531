"""The lease: one decision point per host across all nodes (the ``LEASE`` script).

A node's lease takes, best first across the hosts ready now, up to *ready* entries
(at most *limit*; a node asks for no more than its extraction has room for), each
leased to the node: its host's in-flight count goes up and its turn is taken
(``last`` is the turn's time when the host has a delay).  With *reserve* it also
takes, while it has fewer than *limit*, the next turn of hosts waiting only for their delay
(their last request ended; not a backoff, not a hold, nothing in flight) when that
turn is more than *reserve* seconds away; each such entry's ``wait`` says when its
turn comes, and the node keeps it until then.

**A host's turns, kept by one node.**  With *horizon* (seconds), a host taken that
way comes with its next turns up to *horizon* ahead, each planned a delay after the
one before.  The node times them itself (:mod:`~.politeness`): one request at a
time, the next a delay after the previous one ended, as Redis would have timed
them.  While they are out the host's in-flight count is full, so no other node gets
the host; once the node has released them all the host's next turn is a delay after
the last one ended, whoever takes it.  So a node keeping a host makes one round per
*horizon*, not one per page, and a page found meanwhile waits at most that long
for its turn.

**A fair share.**  A node takes turns ahead only of up to its share of the hosts
with work (their number over the live nodes), counting the other hosts whose leases
it holds (pages not yet acknowledged included); past it, the turn is left and a
parked node is woken for it, so the node that started first, or one slow to finish
its pages, does not keep every host.

Runs after :data:`~.scripts.LIB` with its calling convention (see :mod:`~.scripts`).
"""

from __future__ import annotations

# ARGV: limit, reserve ('': take no turn ahead), park (1: the round waits on
# P:wake:<node> after this call, which gets a token when this lease brought entries;
# and P:wake one when ready hosts are left), horizon ('' or 0: one turn of a host),
# ready (at most that many entries of hosts ready now; '': limit).
# Returns {wait or nil, queued, {host, key, payload, wait, ...}, members of ready that
# no node wrote (dropped)}; an entry's wait: seconds until its host's turn (0: now).
LEASE = r"""
local limit, reserve, park = tonumber(ARGV[A + 1]), tonumber(ARGV[A + 2]), ARGV[A + 3] == '1'
local horizon = tonumber(ARGV[A + 4]) or 0
local ready = math.min(limit, tonumber(ARGV[A + 5]) or limit)
for _, host in ipairs(redis.call('ZRANGEBYSCORE', K_WAITING, '-inf', fmt(NOW),
                                 'LIMIT', 0, 1000)) do
  place(host)
end
redis.call('ZADD', K_NODES, 'NX', fmt(NOW), NODE)
local out, bad = {}, 0
-- host's best entry, leased to NODE for its turn at *at* (NOW or later)
local function take(host, key, at)
  local hk, t = hkey(host), fmt(at)
  local f = redis.call('HMGET', hk, 'delay', 'last')
  redis.call('HSET', K_LEASES, key, NODE .. '\n' .. host .. '\n' .. t .. '\n' .. (f[2] or ''))
  redis.call('ZADD', K_DEADLINES, fmt(at + LEASE_DEADLINE), key)
  redis.call('SADD', nkey(NODE), key)
  redis.call('ZADD', fkey(host), t, key)
  if num(f[1], 0) > 0 then redis.call('HSET', hk, 'last', t) end
  redis.call('HINCRBY', K_COUNTS, 'queued', -1)
  place(host)
  for _, v in ipairs({host, key, redis.call('HGET', K_PAYLOADS, key) or '', fmt(at - NOW)}) do
    out[#out + 1] = v
  end
end
local function take_ready(first)
  local key, host = string.sub(first, 1, 16), string.sub(first, 17)
  if host == '' or redis.call('ZREM', qkey(host), key) == 0 then
    redis.call('ZREM', K_READY, first)
    if host ~= '' then unplace(host); place(host) end
    return false  -- a member no node wrote
  end
  take(host, key, NOW)
  redis.call('ZREM', K_READY, first)  -- gone already, unless host:<host> named another
  return true
end
while #out < 4 * ready do
  local first = redis.call('ZRANGE', K_READY, 0, 0)[1]
  if not first then break end
  if not take_ready(first) then bad = bad + 1 end
end
-- the hosts of this node's leases (host -> true, n: their number), read once
local held
local function held_hosts()
  if held then return held end
  held = {n = 0}
  for _, key in ipairs(redis.call('SMEMBERS', nkey(NODE))) do
    local _, host = split(redis.call('HGET', K_LEASES, key) or '')
    if host and host ~= '' and not held[host] then held[host], held.n = true, held.n + 1 end
  end
  return held
end
-- host's turns from *at* on, up to the horizon: the node times all but the first
local function keep_turns(host, key, at, delay)
  repeat
    redis.call('ZREM', qkey(host), key)
    take(host, key, at)
    at = at + delay
    key = #out < 4 * limit and delay > 0 and at - NOW <= horizon and best_of(host)
  until not key
  local mine = held_hosts()
  if not mine[host] then mine[host], mine.n = true, mine.n + 1 end
end
if reserve and #out < 4 * limit then
  local nodes = redis.call('ZCOUNT', K_NODES, fmt(NOW - LEASE_TIMEOUT), '+inf')
  local share = math.ceil((redis.call('ZCARD', K_WAITING) + redis.call('ZCARD', K_READY))
                          / math.max(1, nodes))
  for _, host in ipairs(redis.call('ZRANGE', K_WAITING, 0, 4 * limit - 1)) do
    if #out >= 4 * limit then break end
    local f = redis.call('HMGET', hkey(host), 'delay', 'concurrency', 'last', 'backoff_until',
                         'held')
    local at = ready_at(host, f)
    local key = reservable(host, f, at) and best_of(host)
    if key and at - NOW <= reserve then
      LEASABLE = true  -- ready within a linger: a parked node may take it then
    elseif key and held_hosts().n - (held_hosts()[host] and 1 or 0) >= share then
      LEASABLE = true  -- past this node's share: another node's
      break
    elseif key then
      keep_turns(host, key, math.max(at, NOW), num(f[1], 0))
    end
  end
  signal()
end
local wait = false
if park and #out > 0 then redis.call('RPUSH', P .. ':wake:' .. NODE, 1) end
if redis.call('ZCARD', K_READY) > 0 then
  wait = '0'
  LEASABLE = true
  signal()  -- more than this node took: another one's turn
else
  local first = redis.call('ZRANGE', K_WAITING, 0, 0, 'WITHSCORES')
  if first[2] then wait = fmt(math.max(0, tonumber(first[2]) - NOW)) end
end
return {wait, redis.call('HGET', K_COUNTS, 'queued') or '0', out, bad}
"""
