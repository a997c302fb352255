"""The Lua scripts a Redis (or Valkey) server runs for sessions: each state change is
one of these, atomic on the server, timed by the server's ``TIME`` (milliseconds).

Each implements one rule of ``toolguard.sessions._rules`` (named in its comment), as
the memory store's functions there do in Python; the differential test runs both.

A tool's record is a hash: ``f`` consecutive failures, ``o`` when the breaker opened,
``c`` the cool-down it opened with, ``l`` the half-open trial's lease (until when),
``r`` model retries spent, ``n`` the number of the last counted step. Its counted
steps are a sorted set (score: that number, so the oldest go first); a session's
tools a set (for reset and renewal). Every key a script writes gets the TTL passed in
(milliseconds), and :data:`TOUCH` renews a whole session.

``skew`` (milliseconds, 0 but in tests) is added to the server's clock: the
differential test moves both stores' clocks past a cool-down without waiting.
The replies are integers (Lua numbers become integer replies): times are in ms.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CHECK", "RECORD", "RESET", "RETRY", "TOUCH"]

_NOW: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[3])
"""

# R1 Check: a closed breaker runs the tool (reporting its success if there were failures
# in a row); an open one refuses it for the rest of its cool-down; past the cool-down
# the first caller gets the half-open trial as a lease of one cool-down, and the others
# are refused until the trial reports or its lease ends.
# KEYS[1] the record; ARGV: cool-down (ms), TTL (ms), skew (ms).
# Reply: {status, failures, retry_after_ms}; status 0 closed, 1 trial (leased), 2 open.
CHECK: Final = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'f', 'o', 'l')
local f = tonumber(h[1]) or 0
local o = tonumber(h[2])
if not o then return {0, f, 0} end
local cd = tonumber(ARGV[1])
local l = tonumber(h[3])
local waited = now - o
if waited >= cd and (not l or now >= l) then
  redis.call('HSET', KEYS[1], 'l', now + cd)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, f, 0}
end
local retry = cd - waited
if retry < 0 then retry = 0 end
if l and l - now > retry then retry = l - now end
return {2, f, retry}
"""
)

# R2 Outcome: a failure counts one more in a row and opens the breaker at the
# threshold, or at once if it was open (a failed trial); a success closes it and clears
# the failures in a row; either ends the trial's lease.
# KEYS[1] the record, KEYS[2] (a session's, not a fleet breaker's) its set of tools;
# ARGV: failed ("1"/"0"), failures that open it, skew (ms), cool-down (ms), TTL (ms),
# the tool's key part.
# Reply: {event, failures, open}; event 0 none, 1 opened, 2 closed.
RECORD: Final = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'f', 'o')
local f = tonumber(h[1]) or 0
local was_open = h[2] ~= false
local event = 0
local open = 0
redis.call('HDEL', KEYS[1], 'l')
if ARGV[1] == '1' then
  f = f + 1
  redis.call('HSET', KEYS[1], 'f', f)
  if was_open or f >= tonumber(ARGV[2]) then
    redis.call('HSET', KEYS[1], 'o', now, 'c', ARGV[4])
    event = 1
    open = 1
  end
else
  redis.call('HSET', KEYS[1], 'f', 0)
  if was_open then
    redis.call('HDEL', KEYS[1], 'o', 'c')
    event = 2
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if KEYS[2] then
  redis.call('SADD', KEYS[2], ARGV[6])
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
end
return {event, f, open}
"""
)

# R3 Budget: a RetryWithFeedback counts once per model step and tool; the newest
# ARGV[4] steps that counted are remembered (numbered in the record, so exactly the
# oldest is forgotten, as memory forgets it).
# KEYS[1] the record, KEYS[2] its counted steps, KEYS[3] the session's tools;
# ARGV: step id, TTL (ms), the tool's key part, steps kept. Reply: the retries spent.
RETRY: Final = """
local used
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  used = tonumber(redis.call('HGET', KEYS[1], 'r')) or 0
else
  local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
  redis.call('ZADD', KEYS[2], n, ARGV[1])
  local kept = tonumber(ARGV[4])
  if redis.call('ZCARD', KEYS[2]) > kept then
    redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(kept + 1))
  end
  used = redis.call('HINCRBY', KEYS[1], 'r', 1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return used
"""

# R4 Reset: forget a session's failures, breakers, budgets and counted steps, for one
# tool or all (a set of tools of the wrong type is deleted too: reset repairs it).
# KEYS[1] the session's tools; ARGV: the session's key prefix, and the tool's key part
# ("" for every tool). The keys built here share KEYS[1]'s hash tag, so they live in
# its cluster slot.
RESET: Final = """
local prefix = ARGV[1]
if ARGV[2] ~= '' then
  redis.call('DEL', prefix .. ':t:' .. ARGV[2], prefix .. ':s:' .. ARGV[2])
  if redis.call('TYPE', KEYS[1]).ok == 'set' then
    redis.call('SREM', KEYS[1], ARGV[2])
  end
  return 1
end
local n = 0
if redis.call('TYPE', KEYS[1]).ok == 'set' then
  for _, part in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    redis.call('DEL', prefix .. ':t:' .. part, prefix .. ':s:' .. part)
    n = n + 1
  end
end
redis.call('DEL', KEYS[1])
return n
"""

# R5 Life: a session in use keeps all of its state: renew every key of it.
# KEYS[1] the session's tools; ARGV: the session's key prefix, TTL (ms).
TOUCH: Final = """
if redis.call('TYPE', KEYS[1]).ok ~= 'set' then return 0 end
local prefix = ARGV[1]
local n = 0
for _, part in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  redis.call('PEXPIRE', prefix .. ':t:' .. part, ARGV[2])
  redis.call('PEXPIRE', prefix .. ':s:' .. part, ARGV[2])
  n = n + 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n
"""
