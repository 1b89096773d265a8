-- The token endpoint's authorization_code grant: each request spends one pre-minted code
-- (BENCH_POOL: one form body a line, from seed.py codes). A thread whose codes run out
-- stops and the run is marked exhausted (its req/s is then a lower bound).
dofile(os.getenv("BENCH_DIR") .. "/wrk/common.lua")
local pool, next_i
local headers = {
   ["Content-Type"] = "application/x-www-form-urlencoded",
   ["Authorization"] = os.getenv("BENCH_BASIC"),
}

function init(args)
   pool = my_lines(os.getenv("BENCH_POOL"))
   next_i = 1
end

function request()
   local body = pool[next_i]
   if body == nil then
      exhausted = 1
      wrk.thread:stop()
      return wrk.format("GET", "/healthz")
   end
   next_i = next_i + 1
   return wrk.format("POST", "/api/oauth/access_token", headers, body)
end
