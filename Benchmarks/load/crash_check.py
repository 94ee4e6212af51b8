"""After a crash run: every sign-in and refresh that was answered 200 must be in the database.

Usage: crash_check.py RESULTS_FILE sqlite PATH | crash_check.py RESULTS_FILE postgres URL
Prints one JSON line; exit 1 when an answered account, session or refresh token is missing.
"""
import hashlib
import json
import subprocess
import sys

results_file, kind, where = sys.argv[1], sys.argv[2], sys.argv[3]
answers = [json.loads(line) for line in open(results_file) if line.strip()]


def query(sql):
    if kind == "sqlite":
        command = ["sqlite3", where, sql]
    else:
        command = ["psql", where, "-tAc", sql]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()


users = set(query("SELECT id FROM users"))
hashes = set(query("SELECT hash FROM refresh_tokens"))
missing_users = [a for a in answers if a["user"] not in users]
missing_tokens = [a for a in answers if hashlib.sha256(a["refreshToken"].encode()).hexdigest() not in hashes]
orphans = {
    "sessionsWithoutUser": int(query("SELECT count(*) FROM sessions s LEFT JOIN users u ON u.id = s.user_id WHERE u.id IS NULL")[0]),
    "tokensWithoutSession": int(query("SELECT count(*) FROM refresh_tokens t LEFT JOIN sessions s ON s.id = t.session_id WHERE s.id IS NULL")[0]),
    # Since schema version 7 a token's account is its session's, with no foreign key of its own to check it.
    "tokensOfAnotherAccount": int(query("SELECT count(*) FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id WHERE t.user_id <> s.user_id")[0]),
}
result = {
    "answered200": len(answers),
    "missingAccounts": len(missing_users),
    "missingRefreshTokens": len(missing_tokens),
    **orphans,
}
if kind == "sqlite":
    result["integrityCheck"] = " ".join(query("PRAGMA integrity_check"))
print(json.dumps(result))
ok = not missing_users and not missing_tokens and not any(orphans.values())
ok = ok and (kind != "sqlite" or result["integrityCheck"] == "ok")
sys.exit(0 if ok else 1)
