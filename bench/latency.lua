-- wrk reporter for bench/latency.sh: one line of req/s, latency percentiles and maximum (microseconds).
done = function(summary, latency, requests)
  local out = string.format("%.0f", summary.requests / (summary.duration / 1e6))
  for _, p in ipairs({50, 75, 90, 95, 99, 99.9}) do out = out .. string.format(" %.0f", latency:percentile(p)) end
  io.write(out .. string.format(" %.0f\n", latency.max))
end
