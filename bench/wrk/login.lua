-- POST /api/oauth/login with the right password: argon2id verification, a new session.
-- One sign-in form (BENCH_LOGIN_BODY, BENCH_LOGIN_COOKIE files, from seed.py): its CSRF
-- token is bound to its cookie, not single use. Success is a 303 back to the authorize page.
dofile(os.getenv("BENCH_DIR") .. "/wrk/common.lua")
allowed[303] = true
wrk.method = "POST"
wrk.path = "/api/oauth/login"
wrk.body = slurp(os.getenv("BENCH_LOGIN_BODY"))
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Cookie"] = slurp(os.getenv("BENCH_LOGIN_COOKIE"))
