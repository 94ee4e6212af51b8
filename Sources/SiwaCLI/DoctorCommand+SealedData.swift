import AccountStore
import AccountStoreSQL
import AuthServer
import Foundation
import Logging

extension DoctorCommand {
    /// What the data keys make of the database's sealed data.
    struct SealedDataCheck {
        var findings: [Finding]
        /// Whether `siwa serve` would refuse to start: a signing key does not open (``ServerSettings/checkDataKey(opens:)``).
        var serveRefuses = false
    }

    /// Whether the data keys open what the database holds sealed (Apple's refresh tokens, the signing keys): a database
    /// restored from before a key's retirement holds data under a key the ring lacks, and only a restored key opens
    /// it. Reads the database as it is (never creates or migrates it); nothing to check when it does not exist yet, and
    /// a database that cannot be opened is a finding of ``checkDatabase(_:poolSize:)`` already.
    static func checkSealedData(_ settings: ServerSettings) async -> SealedDataCheck {
        if settings.databaseURL == nil, !FileManager.default.fileExists(atPath: settings.databasePath) {
            return SealedDataCheck(findings: [])
        }
        var logger = Logger(label: "siwa.doctor")
        logger.logLevel = .error
        let store: SQLAccountStore
        do {
            store = try await StoreFactory.openExisting(settings, logger: logger)
        } catch {
            return SealedDataCheck(findings: [
                Finding(
                    setting: settings.dataKeySetting,
                    ok: true,
                    message: "not compared with the database's sealed data: \(error.reason)",
                    note: true
                )
            ])
        }
        let census: DataResealer.Census
        var serveRefuses = false
        do {
            census = try await DataResealer(store: store, sealer: settings.quietDataSealer).census(batchSize: 2_000)
            do {
                try await settings.checkDataKey(opens: store)
            } catch is ServerSettings.Problem {
                serveRefuses = true
            }
        } catch {
            await store.shutdown()
            return SealedDataCheck(findings: [
                Finding(
                    setting: settings.dataKeySetting,
                    ok: false,
                    message: "the database's sealed data cannot be read: \(error)"
                )
            ])
        }
        await store.shutdown()
        return SealedDataCheck(findings: sealedDataFindings(census, settings), serveRefuses: serveRefuses)
    }

    /// What a census of the sealed data means for the data keys, as doctor says it and `siwa serve` logs it.
    static func sealedDataFindings(_ census: DataResealer.Census, _ settings: ServerSettings) -> [Finding] {
        let setting = settings.dataKeySetting
        var findings: [Finding] = []
        guard settings.dataKeyFound else {
            // No key file: serve would create a new key, which opens nothing sealed before.
            let sealed = census.total
            if sealed > 0 {
                findings.append(
                    Finding(
                        setting: setting,
                        ok: false,
                        message: "the database holds \(sealed) sealed item(s) and there is no key file "
                            + "\(settings.dataKeyFile): restore it from your backup (or set SIWA_DATA_KEY); a new key "
                            + "cannot open them"
                    )
                )
            }
            return findings
        }
        let source = settings.dataKeySource
        for (id, count) in census.byMissingKey.sorted(by: { $0.key < $1.key }) {
            findings.append(
                Finding(
                    setting: setting,
                    ok: false,
                    message: "the database holds \(count) item(s) sealed under data key \(id), which \(source) lacks: "
                        + settings.missingKeyAdvice(id)
                )
            )
        }
        if census.unopenable > 0 {
            findings.append(
                Finding(
                    setting: setting,
                    ok: false,
                    message: "the database holds \(census.unopenable) item(s) sealed before data keys had ids that "
                        + "open under none of \(source)'s keys: add the key of that time back, from your backup"
                )
            )
        }
        if findings.isEmpty {
            findings.append(
                Finding(
                    setting: setting,
                    ok: true,
                    message: census.total == 0
                        ? "the database holds no sealed data yet"
                        : "the keys open the database's \(census.total) sealed item(s)"
                )
            )
        }
        return findings
    }
}
