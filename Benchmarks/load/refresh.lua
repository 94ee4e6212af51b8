-- POST /auth/refresh with rotating refresh tokens. Each wrk thread holds a queue of independent sessions
-- (more than its connections): a request takes a token from the queue, the answer's new token goes back in,
-- so no refresh token is ever presented twice (which siwa would treat as theft).
local tokens_file = os.getenv("SIWA_REFRESH_TOKENS")
local counter = 0
local threads = {}

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  queue = {}
  local index = 0
  for line in io.lines(tokens_file) do
    index = index + 1
    if index % wrk_threads() == id - 1 then table.insert(queue, line) end
  end
  inflight = {}
end

function wrk_threads()
  return tonumber(os.getenv("SIWA_WRK_THREADS") or "2")
end

request = function()
  local token = table.remove(queue, 1)
  if token == nil then
    return wrk.format("GET", "/healthz")
  end
  return wrk.format("POST", "/auth/refresh", {["content-type"] = "application/json"},
    '{"refreshToken":"' .. token .. '"}')
end

response = function(status, headers, body)
  local token = string.match(body, '"refreshToken":"([^"]+)"')
  if token ~= nil then table.insert(queue, token) end
end
