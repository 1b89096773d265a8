-- GETs that rotate through the paths of BENCH_PAGES (one path a line, from seed.py pages:
-- every page of a paged catalog listing), as BENCH_BEARER's holder. Each thread starts at
-- its own page, so the connections spread over the whole walk.
dofile(os.getenv("BENCH_DIR") .. "/wrk/common.lua")
local paths, next_index
local headers = { ["Authorization"] = "Bearer " .. (os.getenv("BENCH_BEARER") or "") }

function init(args)
   paths = {}
   for line in io.lines(os.getenv("BENCH_PAGES")) do
      if line ~= "" then
         table.insert(paths, line)
      end
   end
   next_index = (thread_index - 1) % #paths
end

function request()
   local path = paths[next_index + 1]
   next_index = (next_index + 1) % #paths
   return wrk.format("GET", path, headers)
end
