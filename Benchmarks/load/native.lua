-- POST /auth/apple/native for a returning user: the same valid identity token (no server nonce), read from a file.
local file = io.open(os.getenv("SIWA_IDENTITY_TOKEN_FILE"))
local token = file:read("*l")
file:close()
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"identityToken":"' .. token .. '"}'
