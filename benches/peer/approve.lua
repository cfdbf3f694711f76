-- benches/peer/approve.lua: a wrk (4.1) script of approvals, the same for kh-review and for
-- the benchmark peer (make bench-peer): POST /api/v1/reviews/<id>/approve, body {}, once per
-- pending review.
--   KH_WRK_IDS    a file of review ids, one uuid a line
--   KH_WRK_TOKEN  the bearer token (a reviewer's)
-- Each thread approves its own share of the ids (every <threads>-th line, from its index), so
-- no id is sent twice. A thread out of ids sends approvals of the nil uuid, which no review
-- has: each is a 404, and wrk reports them as "Non-2xx or 3xx responses", so a run longer
-- than its ids shows, rather than passing off repeats or no-ops as approvals.
-- The thread count is wrk's own -t (read from /proc/self/cmdline; 2, wrk's default, if none).
-- wrk calls request() once in thread 1 to check it before the run: that id is never sent.

local EXHAUSTED = "/api/v1/reviews/00000000-0000-0000-0000-000000000000/approve"

-- Main state: wrk's thread count, then each thread's index (setup runs once per thread).
local function thread_count()
  local f = io.open("/proc/self/cmdline", "rb")
  if not f then return 2 end
  local argv = {}
  for a in f:read("*a"):gmatch("[^%z]+") do argv[#argv + 1] = a end
  f:close()
  local n = 2
  for i, a in ipairs(argv) do
    local v = a:match("^%-t(.+)$") or a:match("^%-%-threads=(.+)$")
    if a == "-t" or a == "--threads" then v = argv[i + 1] end
    if v then n = tonumber(v) or error("approve.lua: cannot read the thread count " .. v) end
  end
  return n
end

local threads, started = nil, 0

function setup(thread)
  threads = threads or thread_count()
  if started >= threads then error("approve.lua: more threads than -t says") end
  thread:set("index", started)
  thread:set("count", threads)
  started = started + 1
end

-- Thread state: its share of the ids, as ready-made requests.
local requests, next_request, exhausted = {}, 1, nil

function init(args)
  local path, token = os.getenv("KH_WRK_IDS"), os.getenv("KH_WRK_TOKEN")
  if not path or not token then error("approve.lua: set KH_WRK_IDS and KH_WRK_TOKEN") end
  local headers = {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. token,
  }
  local f = io.open(path, "r") or error("approve.lua: cannot open " .. path)
  local n = 0
  for line in f:lines() do
    local id = line:match("^%s*(%S+)%s*$")
    if id then
      if n % count == index then
        requests[#requests + 1] = wrk.format("POST", "/api/v1/reviews/" .. id .. "/approve", headers, "{}")
      end
      n = n + 1
    end
  end
  f:close()
  exhausted = wrk.format("POST", EXHAUSTED, headers, "{}")
end

function request()
  local r = requests[next_request]
  if not r then return exhausted end
  requests[next_request] = nil
  next_request = next_request + 1
  return r
end
