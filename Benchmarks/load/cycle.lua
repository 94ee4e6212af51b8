-- One request per line of PEER_TOKENS, cycling: PEER_MODE native (POST {"identityToken"}), vapor (POST
-- {"appleIdentityToken"}, the Vapor tutorial's body) or bearer (GET with Authorization: Bearer <line>).
local path = os.getenv("PEER_TOKENS")
local mode = os.getenv("PEER_MODE") or "bearer"
local json = { ["content-type"] = "application/json" }

function init(args)
  tokens = {}
  for line in io.lines(path) do
    if #line > 0 then table.insert(tokens, line) end
  end
  -- Threads start at different places, so that they do not send the same token at the same time.
  index = math.random(#tokens)
end

function request()
  index = index % #tokens + 1
  local token = tokens[index]
  if mode == "native" then
    return wrk.format("POST", nil, json, '{"identityToken":"' .. token .. '"}')
  elseif mode == "vapor" then
    return wrk.format("POST", nil, json, '{"appleIdentityToken":"' .. token .. '"}')
  end
  return wrk.format("GET", nil, { ["authorization"] = "Bearer " .. token }, nil)
end
