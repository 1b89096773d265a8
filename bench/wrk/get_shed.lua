-- A GET of the URL given to wrk as BENCH_BEARER's holder, where a 503 (load shed, with
-- `Retry-After`) is an expected answer: the many-connection memory scenarios, whose figure is
-- the server's RSS, run above what `max_in_flight` admits.
allowed = { [503] = true }
dofile(os.getenv("BENCH_DIR") .. "/wrk/common.lua")
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("BENCH_BEARER") or "")
