"""The cluster frontier's scripts that change a host or read the crawl's counts.

Backoff, hold and policy (the rules of :mod:`scrapy_focus.frontier.politeness`, for
every node at once), the rescoring reads and moves, and the status.  Each runs after
:data:`~.scripts.LIB` with its calling convention (see :mod:`~.scripts`).
"""

from __future__ import annotations

# ARGV: host, seconds ('' = none: exponential), delay, concurrency.  Returns the wait
# ('inf' when the host asked for more than max_host_delay and is held).
BACKOFF = r"""
local host, secs = ARGV[A + 1], ARGV[A + 2]
ensure(host, ARGV[A + 3], ARGV[A + 4])
local hk = hkey(host)
local level = redis.call('HINCRBY', hk, 'backoff_level', 1)
local wait = tonumber(secs)
if not wait then
  wait = BASE_BACKOFF * 2 ^ (level - 1)
elseif MAX_HOST_DELAY > 0 and wait > MAX_HOST_DELAY then
  hold(host, 'it answered Retry-After: ' .. secs .. 's')
  return 'inf'
end
wait = math.max(0, math.min(wait, MAX_BACKOFF))
if NOW + wait > num(redis.call('HGET', hk, 'backoff_until'), NEVER) then
  redis.call('HSET', hk, 'backoff_until', fmt(NOW + wait))
end
place(host)
return fmt(wait)
"""

# ARGV: host, why.
HOLD = r"""
hold(ARGV[A + 1], ARGV[A + 2])
"""

# ARGV: host, delay, concurrency, default delay, default concurrency.
POLICY = r"""
local host = ARGV[A + 1]
ensure(host, ARGV[A + 4], ARGV[A + 5])
local hk, delay = hkey(host), tonumber(ARGV[A + 2])
if delay > num(redis.call('HGET', hk, 'delay'), 0) then
  redis.call('HSET', hk, 'delay', ARGV[A + 2])
end
redis.call('HSET', hk, 'concurrency', ARGV[A + 3])
if MAX_HOST_DELAY > 0 and delay > MAX_HOST_DELAY then
  hold(host, 'robots.txt asks for a Crawl-delay of ' .. ARGV[A + 2] .. 's')
end
place(host)
"""

# ARGV: host, limit.  Returns {key, payload, ...}, best first.
ITER = r"""
local out = {}
for _, key in ipairs(redis.call('ZRANGE', qkey(ARGV[A + 1]), 0, tonumber(ARGV[A + 2]) - 1)) do
  out[#out + 1] = key
  out[#out + 1] = redis.call('HGET', K_PAYLOADS, key) or ''
end
return out
"""

# ARGV: host, then per move old key, new rank.  Returns the new key, or nil when the
# old one was no longer queued, per move.
REKEY = r"""
local host = ARGV[A + 1]
local out = {}
for i = A + 2, #ARGV, 2 do
  local old = ARGV[i]
  if redis.call('ZREM', qkey(host), old) == 1 then
    local new = new_key(ARGV[i + 1])
    redis.call('ZADD', qkey(host), 0, new)
    move_entry(old, new)
    out[#out + 1] = new
  else
    out[#out + 1] = false
  end
end
place(host)
return out
"""

# Returns {queued, held, leased, hosts waiting, hosts ready, nodes alive}.
STATUS = r"""
local c = redis.call('HMGET', K_COUNTS, 'queued', 'held')
return {
  tonumber(c[1]) or 0, tonumber(c[2]) or 0, redis.call('HLEN', K_LEASES),
  redis.call('ZCARD', K_WAITING), redis.call('ZCARD', K_READY),
  redis.call('ZCOUNT', K_NODES, fmt(NOW - LEASE_TIMEOUT), '+inf'),
}
"""

# Returns the keys leased to this node now (its lease set), to run in a round's pipeline.
MINE = r"""
return redis.call('SMEMBERS', nkey(NODE))
"""
