-- GET /api/me with a bearer token read from a file.
local file = io.open(os.getenv("SIWA_ACCESS_TOKEN_FILE"))
local token = file:read("*l")
file:close()
wrk.headers["authorization"] = "Bearer " .. token
