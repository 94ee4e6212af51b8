public import AccountStore

/// Re-seals the store's sealed data under the sealing data key, and counts which key seals what: the work of
/// `siwa keys rotate-data-key`, `siwa keys data-keys` and `siwa keys retire-data-key`.
///
/// Safe to stop at any point and safe with servers running: each item is replaced in one compare-and-swap
/// (``AccountStore/replaceSealed(_:with:)``), so it is always sealed under the old key or the new one, both in the ring,
/// and an item a server rewrote meanwhile is left for the next pass.
public struct DataResealer: Sendable {
    let store: any AccountStore
    let sealer: DataSealer

    public init(store: any AccountStore, sealer: DataSealer) {
        self.store = store
        self.sealer = sealer
    }

    /// Which key seals how many items.
    public struct Census: Sendable, Equatable {
        /// Items by the ring's key that seals them (with a header naming it, or without one but opening under it).
        public var byKey: [DataKeyID: Int] = [:]
        /// Of those, the items sealed before key ids (siwa 0.3), by the key that opens them.
        public var withoutKeyID: [DataKeyID: Int] = [:]
        /// Items whose header names a key the ring lacks.
        public var byMissingKey: [DataKeyID: Int] = [:]
        /// Items from before key ids that no key of the ring opens.
        public var unopenable = 0
        /// Every item.
        public var total = 0

        public init() {}

        /// The items sealed under `id`.
        public func count(_ id: DataKeyID) -> Int { byKey[id] ?? byMissingKey[id] ?? 0 }
    }

    /// What one pass did.
    public struct Pass: Sendable, Equatable {
        /// Items looked at.
        public var examined = 0
        /// Items sealed again under the sealing key.
        public var resealed = 0
        /// Items already under the sealing key, with its id.
        public var current = 0
        /// Items a server changed between reading and replacing them (the next pass takes them).
        public var changedMeanwhile = 0
        /// Items that did not open, by reason (a key the ring lacks, damaged data).
        public var failures: [String: Int] = [:]

        public init() {}

        /// Items that did not open.
        public var failed: Int { failures.values.reduce(0, +) }
    }

    /// Counts every item by the key that sealed it (opening only data from before key ids, to find its key).
    public func census(batchSize: Int = 500) async throws -> Census {
        var census = Census()
        let ring = sealer.keys
        try await walk(batchSize: batchSize) { item in
            census.total += 1
            switch sealer.sealingKey(of: item.sealed) {
            case .named(let id) where ring.key(id) != nil: census.byKey[id, default: 0] += 1
            case .named(let id): census.byMissingKey[id, default: 0] += 1
            case .unnamed(let id?):
                census.byKey[id, default: 0] += 1
                census.withoutKeyID[id, default: 0] += 1
            case .unnamed(nil): census.unopenable += 1
            }
        }
        return census
    }

    /// One pass over every item: those not sealed under the sealing key, with its id, are opened and sealed again,
    /// and replaced only if unchanged since read. `progress` is called after each batch.
    public func reseal(batchSize: Int, progress: (Pass) -> Void = { _ in }) async throws -> Pass {
        var pass = Pass()
        try await walk(batchSize: batchSize) { item in
            pass.examined += 1
            if sealer.sealingKey(of: item.sealed) == .named(sealer.keys.primary.id) {
                pass.current += 1
                return
            }
            let resealed: [UInt8]
            do {
                resealed = try sealer.seal(try sealer.open(item.sealed))
            } catch {
                pass.failures["\(item.kind.rawValue): \(error)", default: 0] += 1
                return
            }
            if try await store.replaceSealed(item, with: resealed) {
                pass.resealed += 1
            } else {
                pass.changedMeanwhile += 1
            }
        } afterBatch: {
            progress(pass)
        }
        return pass
    }

    /// Every sealed item, a page of `batchSize` at a time.
    private func walk(
        batchSize: Int,
        _ body: (SealedItem) async throws -> Void,
        afterBatch: () -> Void = {}
    ) async throws {
        var after: SealedItem.Position?
        while true {
            // A stopping server cancels its census: between batches, each item stays as it was or as it was resealed.
            try Task.checkCancellation()
            let page = try await store.sealedItems(after: after, limit: max(batchSize, 1))
            guard let last = page.last else { return }
            for item in page { try await body(item) }
            afterBatch()
            after = last.position
        }
    }
}
