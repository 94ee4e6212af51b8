-- Mixed load for the soak (issue 10). Every wrk thread cycles through a fixed mix of 20 requests:
--   8 GET /api/me (bearer), 4 POST /auth/refresh (rotating), 2 POST /auth/apple/native (returning user),
--   2 POST /auth/apple/native (first sign-ins of distinct users, rationed over time, while tokens last), 1 POST /auth/logout,
--   1 GET /auth/apple/authorize (a web-flow state), 1 GET /healthz, 1 GET /.well-known/jwks.json.
-- Refresh tokens rotate through a per-thread queue so that none is presented twice; sessions of first sign-ins go to
-- a logout queue, so that logouts never end a session whose access token /api/me still uses.
-- SIWA_DELAY_MS (optional) makes each connection wait that long between requests: the soak's throttle.
local returning_token = io.open(os.getenv("SIWA_IDENTITY_TOKEN_FILE")):read("*l")
local access_token = io.open(os.getenv("SIWA_ACCESS_TOKEN_FILE")):read("*l")
local refresh_file = os.getenv("SIWA_REFRESH_TOKENS")
local new_users_file = os.getenv("SIWA_NEW_USER_TOKENS")
local delay_ms = tonumber(os.getenv("SIWA_DELAY_MS") or "0")
-- First sign-ins are spread over the run: at most this many per second (all threads together) while tokens last.
local new_users_per_second = tonumber(os.getenv("SIWA_NEW_USERS_PER_SECOND") or "1000000")
local threads = tonumber(os.getenv("SIWA_WRK_THREADS") or "2")
local queue_cap = 4096
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
end

local function lines_of_this_thread(path)
  local mine = {}
  if path == nil then return mine end
  local index = 0
  for line in io.lines(path) do
    index = index + 1
    if index % threads == id - 1 then table.insert(mine, line) end
  end
  return mine
end

function init(args)
  refresh_queue = lines_of_this_thread(refresh_file)
  new_users = lines_of_this_thread(new_users_file)
  next_new_user = 1
  logout_queue = {}
  step = 0
  started = os.time()
end

local json = {["content-type"] = "application/json"}

local function native(token)
  return wrk.format("POST", "/auth/apple/native", json, '{"identityToken":"' .. token .. '"}')
end

local function me()
  return wrk.format("GET", "/api/me", {["authorization"] = "Bearer " .. access_token})
end

request = function()
  step = step % 20 + 1
  if step <= 8 then return me() end
  if step <= 12 then
    local token = table.remove(refresh_queue, 1)
    if token == nil then return me() end
    return wrk.format("POST", "/auth/refresh", json, '{"refreshToken":"' .. token .. '"}')
  end
  if step <= 14 then return native(returning_token) end
  if step <= 16 then
    local allowed = (os.time() - started + 1) * new_users_per_second / threads
    local token = new_users[next_new_user]
    if token == nil or next_new_user > allowed then return native(returning_token) end
    next_new_user = next_new_user + 1
    return native(token)
  end
  if step == 17 then
    local token = table.remove(logout_queue, 1)
    if token == nil then return me() end
    return wrk.format("POST", "/auth/logout", json, '{"refreshToken":"' .. token .. '"}')
  end
  if step == 18 then return wrk.format("GET", "/auth/apple/authorize?returnUrl=%2F") end
  if step == 19 then return wrk.format("GET", "/healthz") end
  return wrk.format("GET", "/.well-known/jwks.json")
end

response = function(status, headers, body)
  local refresh = string.match(body, '"refreshToken":"([^"]+)"')
  if refresh == nil then return end
  if string.find(body, '"isNewUser":true', 1, true) then
    if #logout_queue < queue_cap then table.insert(logout_queue, refresh) end
  else
    if #refresh_queue < queue_cap then table.insert(refresh_queue, refresh) end
    access_token = string.match(body, '"accessToken":"([^"]+)"') or access_token
  end
end

if delay_ms > 0 then
  delay = function() return delay_ms end
end
