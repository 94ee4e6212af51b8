-- POST /auth/apple/native, each line of PEER_TOKENS once: thread i of SIWA_WRK_THREADS takes lines i+1, i+1+n, ...
-- As on devices, where every sign-in brings a fresh identity token. A thread that runs out starts its lines again
-- and says so at the end: those sign-ins were replays, and the run needs more tokens.
local path = os.getenv("PEER_TOKENS")
local count = tonumber(os.getenv("SIWA_WRK_THREADS") or "2")
local json = { ["content-type"] = "application/json" }
local threads, next_id = {}, 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  tokens, index, wrapped = {}, 0, 0
  local line_number = 0
  for line in io.lines(path) do
    if #line > 0 then
      if line_number % count == id then table.insert(tokens, line) end
      line_number = line_number + 1
    end
  end
end

function request()
  index = index + 1
  if index > #tokens then
    index, wrapped = 1, wrapped + 1
  end
  return wrk.format("POST", nil, json, '{"identityToken":"' .. tokens[index] .. '"}')
end

function done(summary, latency, requests)
  for _, thread in ipairs(threads) do
    local times = thread:get("wrapped")
    if times and times > 0 then
      io.stderr:write("once.lua: a thread ran out of tokens " .. times .. " times: sign-ins were replays\n")
    end
  end
end
