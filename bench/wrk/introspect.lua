-- RFC 7662 introspection of BENCH_TOKEN (an access token of the seeded client) by that
-- client, authenticated with BENCH_BASIC: an active answer every time.
dofile(os.getenv("BENCH_DIR") .. "/wrk/common.lua")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Authorization"] = os.getenv("BENCH_BASIC")
wrk.body = "token=" .. os.getenv("BENCH_TOKEN")
