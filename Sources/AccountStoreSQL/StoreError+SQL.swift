import AccountStore
import PostgresNIO
import SQLiteNIO

extension StoreError {
    /// The store error for an error met while doing `operation`.
    ///
    /// A unique violation becomes ``StoreError/Code/duplicate``, a foreign-key violation ``StoreError/Code/notFound``,
    /// other constraint and data errors ``StoreError/Code/invalidInput``, schema and decoding problems
    /// ``StoreError/Code/corrupt``, and everything else (connections, pool, timeouts, locks) ``StoreError/Code/unavailable``.
    /// The reason names the operation and the driver's error code, never the driver's message: messages can quote
    /// the values of a row (a hash, a key).
    ///
    /// - Parameters:
    ///   - error: Whatever a driver, the pool or the store threw. A ``StoreError`` is kept as it is.
    ///   - operation: What the store was doing, for the reason ("rotate a refresh token").
    init(mapping error: any Error, during operation: String) {
        switch error {
        case let error as StoreError:
            self = error
        case let error as PSQLError:
            self = Self.postgres(error, operation)
        case let error as SQLiteError:
            self = Self.sqlite(error.reason, operation)
        case let error as SQLiteWriterError:
            self = Self.sqlite(error, operation)
        case is PostgresDecodingError, is DecodingError:
            self = StoreError(.corrupt, "\(operation): a stored value could not be read")
        case is EncodingError:
            self = StoreError(.invalidInput, "\(operation): a value could not be written")
        default:
            self = StoreError(.unavailable, "\(operation): the database is unavailable (\(type(of: error)))")
        }
    }

    private static func postgres(_ error: PSQLError, _ operation: String) -> StoreError {
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else {
            return StoreError(.unavailable, "\(operation): the database is unavailable (\(error.code))")
        }
        let code: Code
        switch state {
        case "23505": code = .duplicate
        case "23503": code = .notFound
        case _ where state.hasPrefix("22") || state.hasPrefix("23"): code = .invalidInput
        case _ where state.hasPrefix("42"): code = .corrupt
        default: code = .unavailable
        }
        return StoreError(code, "\(operation): \(Self.explanation(code)) (SQLSTATE \(state))")
    }

    private static func sqlite(_ reason: SQLiteError.Reason, _ operation: String) -> StoreError {
        let code: Code
        switch reason {
        case .constraintUniqueFailed, .constraintPrimaryKeyFailed, .constraintUniqueRowIDFailed:
            code = .duplicate
        case .constraintForeignKeyFailed:
            code = .notFound
        case .constraint, .constraintCheckFailed, .constraintNotNullFailed, .constraintStrictDataTypeFailed,
            .constraintTriggerFailed, .tooBig, .range, .mismatch:
            code = .invalidInput
        case .error, .schema, .format, .corrupt, .corruptIndex, .corruptSequenceSchema, .corruptVirtualTable,
            .notADatabase:
            code = .corrupt
        default:
            code = .unavailable
        }
        return StoreError(code, "\(operation): \(Self.explanation(code)) (SQLite \(reason))")
    }

    /// The same mapping for the writer's result codes (https://www.sqlite.org/rescode.html).
    private static func sqlite(_ error: SQLiteWriterError, _ operation: String) -> StoreError {
        let code: Code
        switch (error.code, error.primaryCode) {
        case (2067, _), (1555, _), (2579, _):  // SQLITE_CONSTRAINT_UNIQUE, _PRIMARYKEY, _ROWID
            code = .duplicate
        case (787, _):  // SQLITE_CONSTRAINT_FOREIGNKEY
            code = .notFound
        case (_, 19), (_, 18), (_, 25), (_, 20):  // SQLITE_CONSTRAINT, SQLITE_TOOBIG, SQLITE_RANGE, SQLITE_MISMATCH
            code = .invalidInput
        case (_, 1), (_, 17), (_, 24), (_, 11), (_, 26):  // SQLITE_ERROR, _SCHEMA, _FORMAT, _CORRUPT, _NOTADB
            code = .corrupt
        default:
            code = .unavailable
        }
        return StoreError(code, "\(operation): \(Self.explanation(code)) (SQLite result code \(error.code))")
    }

    private static func explanation(_ code: Code) -> String {
        switch code {
        case .duplicate: "a unique key exists"
        case .notFound: "a referenced record does not exist"
        case .invalidInput: "the database refused a value"
        case .corrupt: "the schema or stored data is not as expected"
        default: "the database is unavailable"
        }
    }
}

extension PSQLError {
    /// Whether PostgreSQL refused a session whose id another session has (a bounded sign-in's id was taken).
    var violatesSessionsKey: Bool {
        code == .server && serverInfo?[.sqlState] == "23505" && serverInfo?[.constraintName] == "sessions_pkey"
    }
}
