-- A GET of the URL given to wrk; with BENCH_BEARER set, as that token's holder.
dofile(os.getenv("BENCH_DIR") .. "/wrk/common.lua")
local bearer = os.getenv("BENCH_BEARER")
if bearer and bearer ~= "" then
   wrk.headers["Authorization"] = "Bearer " .. bearer
end
