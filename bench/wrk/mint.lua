-- Mints authorization codes for the token_code scenario: replays the approved consent form
-- (BENCH_CONSENT_BODY, BENCH_CONSENT_COOKIE files, from seed.py setup; its CSRF token is
-- bound to the session, not single use), and every 303 carries a new code. Each thread
-- writes its codes to BENCH_MINT_OUT.<thread> as token-request bodies, one a line, and stops
-- after its share of BENCH_MINT_N. wrk itself runs until bench/run.sh interrupts it, once the
-- files hold enough lines.
dofile(os.getenv("BENCH_DIR") .. "/wrk/common.lua")
allowed[303] = true
local function form_encode(s)
   return (string.gsub(s, "[^%w%-%._~]", function(c)
      return string.format("%%%02X", string.byte(c))
   end))
end
wrk.method = "POST"
wrk.path = "/api/oauth/authorize"
wrk.body = slurp(os.getenv("BENCH_CONSENT_BODY"))
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Cookie"] = slurp(os.getenv("BENCH_CONSENT_COOKIE"))
local suffix = "&redirect_uri=" .. form_encode(os.getenv("BENCH_REDIRECT"))
local out, share, minted

function init(args)
   local threads = tonumber(os.getenv("BENCH_THREADS") or "1")
   share = math.ceil(tonumber(os.getenv("BENCH_MINT_N")) / threads)
   minted = 0
   out = assert(io.open(os.getenv("BENCH_MINT_OUT") .. "." .. thread_index, "w"))
end

function on_response(status, headers, body)
   if status ~= 303 or minted >= share then
      return
   end
   local location = headers["location"] or headers["Location"] or ""
   local code = string.match(location, "[?&]code=([^&]+)")
   if code == nil then
      bad = bad + 1
      if last_bad == "" then
         last_bad = "303 without a code: " .. string.sub(location, 1, 120)
      end
      return
   end
   -- Flushed line by line: run.sh counts the lines while wrk runs.
   out:write("grant_type=authorization_code&code=", code, suffix, "\n")
   out:flush()
   minted = minted + 1
   if minted >= share then
      out:close()
      wrk.thread:stop()
   end
end
