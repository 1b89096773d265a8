-- The token endpoint's refresh_token grant. Refresh tokens are single use: each thread
-- starts from its share of BENCH_POOL (one refresh token a line, from seed.py refresh) and
-- sends each answer's new refresh token back later, so every request spends a fresh one.
dofile(os.getenv("BENCH_DIR") .. "/wrk/common.lua")
local queue, head, tail
local headers = {
   ["Content-Type"] = "application/x-www-form-urlencoded",
   ["Authorization"] = os.getenv("BENCH_BASIC"),
}

function init(args)
   queue = my_lines(os.getenv("BENCH_POOL"))
   head, tail = 1, #queue
end

function request()
   if head > tail then
      exhausted = 1
      wrk.thread:stop()
      return wrk.format("GET", "/healthz")
   end
   local token = queue[head]
   queue[head] = nil
   head = head + 1
   return wrk.format("POST", "/api/oauth/access_token", headers,
                     "grant_type=refresh_token&refresh_token=" .. token)
end

function on_response(status, headers, body)
   local token = string.match(body or "", '"refresh_token":"([^"]+)"')
   if token then
      tail = tail + 1
      queue[tail] = token
   end
end
