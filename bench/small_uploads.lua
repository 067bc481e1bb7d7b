-- wrk script for bench/small_uploads.sh: v0 media uploads of one 1 KiB body, each to a name no other request used
-- (wrk.path's "?name=" is followed by a counter), and one reporter line: req/s, p50 and p99 in microseconds,
-- requests, and errors (answers ≥ 400, connect/read/write errors and timeouts).
local counter = 0
local body
init = function(args)
  local f = assert(io.open(args[1], "rb"))
  body = f:read("*a")
  f:close()
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/octet-stream"
  wrk.body = body
end
request = function()
  counter = counter + 1
  return wrk.format(nil, wrk.path .. counter)
end
done = function(summary, latency, requests)
  io.write(string.format("%.0f %.0f %.0f %d %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
