#!/usr/bin/env python3
"""Fills a siwa store (schema version 5, already created by `siwa-search-benchmark prepare`) with accounts and audit
events shaped like a real deployment's, fast: one transaction of `executemany` on SQLite, `COPY` through psql on
PostgreSQL. Used by search-scale.sh.

Accounts: created over the last two years (inserted in creation order, as sign-ups arrive); 55% private relay
addresses, 40% name-based addresses at common domains (a third capitalised, as Apple passes them on), 5% none; 70%
with a name (some not ASCII: José, Søren, Łukasz, Müller, Østergård); search keys lower-cased as siwa's SearchKey
does; a few disabled or with consent revoked. Audit events: AUDIT_PER_DAY a day for AUDIT_DAYS days, mostly sign-ins
by channel, some refused sign-ins by reason, account creations, reuse detections, ended sessions.

Prints the queries to time, one a line: prefixes of an existing name-based email from 1 character to the whole
address (that one upper-cased), a relay address's first 3 characters, a given name that is not ASCII, and an empty
line (every account).

    search_fill.py --users 1000000 --audit-per-day 50000 --audit-days 30 (--sqlite PATH | --postgres URL)
"""
import argparse
import random
import sqlite3
import subprocess
import sys
import time
import unicodedata
import uuid

GIVEN = ("James Mary John Patricia Robert Jennifer Michael Linda William Elizabeth David Barbara Richard Susan Joseph "
         "Jessica Thomas Sarah Charles Karen Daniel Nancy Matthew Lisa Anthony Betty Mark Margaret Donald Sandra Paul "
         "Ashley Steven Kimberly Andrew Emily Kenneth Donna Joshua Michelle Kevin Carol Brian Amanda George Melissa "
         "Maria Anna Sofia Lukas Emma Noah Olivia Liam Mia Elias Lea Finn Ida Jonas Clara Leon Nora Oskar Alma Hugo "
         "José Zoë Søren Åsa Łukasz Chloé Björn Renée Jürgen Inés Ólafur Ærin Dagný François Gaëlle Ömer Çelik "
         "Wei Yuki Hiroshi Priya Arjun Fatima Omar Aisha Mohammed Chen Mei Ravi Ngozi Kwame Ama Thabo").split()
FAMILY = ("Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez Wilson "
          "Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez Lewis "
          "Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall "
          "Müller Schmidt Schneider Fischer Weber Meyer Wagner Becker Hoffmann Schäfer Koch Richter Klein Wolf "
          "Østergård Ødegaard Nuñez Kowalski Nowak Wiśniewski Dvořák Šimek Lindqvist Åberg Johansson Andersson "
          "Rossi Russo Ferrari Esposito Bianchi Dubois Lefèvre Moreau Girard Bernard Petit Durand Leroy "
          "Tanaka Suzuki Sato Kim Park Choi Patel Singh Kumar Khan Okafor Mensah Dlamini").split()
DOMAINS = ["gmail.com"] * 30 + ["icloud.com"] * 25 + ["outlook.com"] * 10 + ["yahoo.com"] * 8 + [
    "hotmail.com", "me.com", "mac.com", "gmx.de", "web.de", "orange.fr", "libero.it", "proton.me", "example.org",
    "acme-corp.com", "university.edu", "mail.ru"] * 2
FOLD = str.maketrans({"ø": "o", "Ø": "O", "ł": "l", "Ł": "L", "æ": "ae", "Æ": "Ae", "ß": "ss", "đ": "d"})
ALPHANUMERIC = "abcdefghijklmnopqrstuvwxyz0123456789"
DAY_MS = 86_400_000
USER_COLUMNS = ("id, apple_user_id, client_id, email, email_key, email_verified, is_private_email, email_forwarding, "
                "given_name, given_name_key, family_name, family_name_key, created_at, updated_at, "
                "apple_consent_revoked_at, disabled_at, last_sign_in_at")
AUDIT_COLUMNS = "id, occurred_at, type, user_id, actor, actor_subject, channel, client_id, reason, session_id, details"


def ascii_fold(text):
    return "".join(c for c in unicodedata.normalize("NFKD", text.translate(FOLD)) if not unicodedata.combining(c))


def new_id(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def users(rng, count, now):
    """The account rows, oldest first, and the sample values."""
    created = sorted(now - rng.randrange(730 * DAY_MS) for _ in range(count))
    sample = {}
    for index, created_at in enumerate(created):
        kind = rng.random()
        given = family = None
        if rng.random() < 0.7:
            given, family = rng.choice(GIVEN), rng.choice(FAMILY)
        if kind < 0.55:
            email = "".join(rng.choice(ALPHANUMERIC) for _ in range(10)) + "@privaterelay.appleid.com"
            private = 1
        elif kind < 0.95:
            first, last = (given, family) if given else (rng.choice(GIVEN), rng.choice(FAMILY))
            local = ascii_fold(f"{first}.{last}")
            if rng.random() < 0.6:
                local += str(rng.randrange(1, 1000))
            email = f"{local}@{rng.choice(DOMAINS)}"
            email = email if rng.random() < 0.33 else email.lower()
            private = 0
        else:
            email, private = None, 0
        if email and index >= count // 2 and "full_email" not in sample and not private:
            sample["full_email"] = email
        if email and private and "relay_email" not in sample:
            sample["relay_email"] = email
        if given and not given.isascii() and "given_name" not in sample:
            sample["given_name"] = given
        last_sign_in = created_at + rng.randrange(max(1, now - created_at))
        yield (
            new_id(rng),
            "%06d.%032x.%04d" % (rng.randrange(10**6), rng.getrandbits(128), rng.randrange(10**4)),
            "com.example.app" if rng.random() < 0.8 else "com.example.web",
            email, email.lower() if email else None, 1, private, 1,
            given, given.lower() if given else None, family, family.lower() if family else None,
            created_at, created_at, last_sign_in if rng.random() < 0.01 else None,
            last_sign_in if rng.random() < 0.002 else None, last_sign_in,
        ), sample


def audit_events(rng, per_day, days, now, user_ids):
    """The audit rows, oldest first."""
    channels = ["native"] * 60 + ["web"] * 30 + ["servicestack"] * 5 + ["vapor-tutorial"] * 3 + ["rentmanager"] * 2
    reasons = ["expired"] * 40 + ["audience"] * 20 + ["signature"] * 10 + ["nonce"] * 25 + ["account_disabled"] * 5
    times = sorted(now - rng.randrange(days * DAY_MS) for _ in range(per_day * days))
    for occurred_at in times:
        roll = rng.random()
        user_id, channel, reason, details, actor = rng.choice(user_ids), rng.choice(channels), None, None, "user"
        if roll < 0.80:
            kind, details = "sign_in", '{"account":"returning"}'
        elif roll < 0.87:
            kind, details = "account_created", None
        elif roll < 0.93:
            kind, channel, reason, user_id, actor = "sign_in_refused", None, rng.choice(reasons), None, "system"
        elif roll < 0.935:
            kind, channel, actor = "refresh_token_reuse", None, "system"
        else:
            kind, channel = "session_ended", None
        session_id = new_id(rng) if kind in ("sign_in", "session_ended", "refresh_token_reuse") else None
        client_id = "com.example.app" if channel in (None, "native") else "com.example.web"
        yield (new_id(rng), occurred_at, kind, user_id, actor, None, channel, client_id, reason, session_id, details)


def fill_sqlite(path, tables):
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA synchronous = OFF")
    connection.execute("BEGIN")
    for table, columns, rows in tables:
        marks = ", ".join("?" * len(columns.split(",")))
        connection.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)
    connection.execute("COMMIT")
    connection.close()


def fill_postgres(url, tables):
    for table, columns, rows in tables:
        copy = f"\\copy {table} ({columns}) FROM STDIN"
        psql = subprocess.Popen(["psql", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", copy], stdin=subprocess.PIPE,
                                text=True)
        for row in rows:
            psql.stdin.write("\t".join("\\N" if value is None else str(value) for value in row) + "\n")
        psql.stdin.close()
        if psql.wait() != 0:
            sys.exit(f"psql failed while copying {table}")
    subprocess.run(["psql", "-q", url, "-c", "ANALYZE users; ANALYZE audit_events"], check=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--audit-per-day", type=int, default=50_000)
    parser.add_argument("--audit-days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=18)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--sqlite")
    target.add_argument("--postgres")
    arguments = parser.parse_args()

    rng = random.Random(arguments.seed)
    now = int(time.time() * 1000)
    sample = {}
    user_ids = []

    def user_rows():
        for row, found in users(rng, arguments.users, now):
            sample.update(found)
            if len(user_ids) < 100_000 or rng.random() < 0.1:
                user_ids.append(row[0])
            yield row

    def audit_rows():
        yield from audit_events(rng, arguments.audit_per_day, arguments.audit_days, now, user_ids)

    tables = [("users", USER_COLUMNS, user_rows()), ("audit_events", AUDIT_COLUMNS, audit_rows())]
    started = time.time()
    if arguments.sqlite:
        fill_sqlite(arguments.sqlite, tables)
    else:
        fill_postgres(arguments.postgres, tables)
    print(f"filled {arguments.users} accounts and {arguments.audit_per_day * arguments.audit_days} audit events "
          f"in {time.time() - started:.0f} s", file=sys.stderr)
    email = sample["full_email"].lower()
    for query in [email[:1], email[:2], email[:4], email[:8], email.upper(), sample["relay_email"][:3],
                  sample["given_name"], ""]:
        print(query)


if __name__ == "__main__":
    main()
