-- Shared by every wrk script of bench/run.sh (loaded with dofile; BENCH_DIR names bench/).
-- Counts every answer outside 2xx (and outside the scenario's `allowed` statuses) and prints
-- one line `BENCH_JSON {...}` at the end: requests, req/s, p50/p99/max latency (µs),
-- the unexpected answers, the answers outside 2xx that the scenario allows (`allowed`),
-- socket errors, and whether a token pool ran dry.
local threads = {}
local count = 0
allowed = allowed or {}
bad = 0
outside_2xx = 0
exhausted = 0
last_bad = ""

function setup(thread)
   count = count + 1
   thread:set("thread_index", count)
   table.insert(threads, thread)
end

function response(status, headers, body)
   if (status < 200 or status > 299) and allowed[status] then
      outside_2xx = outside_2xx + 1
   elseif status < 200 or status > 299 then
      bad = bad + 1
      if last_bad == "" then
         last_bad = status .. " " .. string.sub(body or "", 1, 160)
      end
   end
   if on_response then
      on_response(status, headers, body)
   end
end

-- The whole content of the file at `path`.
function slurp(path)
   local f = assert(io.open(path))
   local s = f:read("*a")
   f:close()
   return s
end

-- The lines of `path` that belong to this thread (every n-th, from its index).
function my_lines(path)
   local n = tonumber(os.getenv("BENCH_THREADS") or "1")
   local lines, i = {}, 0
   for line in io.lines(path) do
      if line ~= "" then
         if i % n == thread_index - 1 then
            table.insert(lines, line)
         end
         i = i + 1
      end
   end
   return lines
end

function done(summary, latency, requests)
   local b, ex, ok_outside, sample = 0, 0, 0, ""
   for _, t in ipairs(threads) do
      b = b + (t:get("bad") or 0)
      ok_outside = ok_outside + (t:get("outside_2xx") or 0)
      ex = ex + (t:get("exhausted") or 0)
      local s = t:get("last_bad")
      if s and s ~= "" then sample = s end
   end
   local e = summary.errors
   sample = string.gsub(sample, '[^%w %-%._:/=,]', '?')
   io.write(string.format(
      'BENCH_JSON {"requests": %d, "duration_us": %d, "rps": %.2f, "p50_us": %d, ' ..
      '"p99_us": %d, "max_us": %d, "non2xx": %d, "socket_errors": %d, "exhausted": %d, ' ..
      '"bytes": %d, "allowed": %d, "sample": "%s"}\n',
      summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
      latency:percentile(50), latency:percentile(99), latency.max, b,
      e.connect + e.read + e.write + e.timeout, ex, summary.bytes, ok_outside, sample))
end
