import AccountStoreSQL
import Testing

@testable import SiwaCLI

/// `siwa doctor`'s rule for PostgreSQL's pool size, on limits a test server would not have.
@Suite("siwa doctor: the pool size against PostgreSQL's limits")
struct DoctorPoolSizeTests {
    typealias Capacity = SQLAccountStore.PostgresConnectionCapacity

    @Test func aPoolThatFitsNamesHowManyInstancesFit() {
        // PostgreSQL's defaults: 100 connections, 3 reserved for superusers; the check's own connection open.
        let finding = DoctorCommand.checkPoolSize(16, capacity: Capacity(maxConnections: 100, reserved: 3, open: 1))
        #expect(finding.ok)
        #expect(
            finding.message
                == "up to 16 connections per instance: PostgreSQL allows this login 97 connections (max_connections 100, "
                + "3 reserved), room for 6 instance(s); 0 open now by other clients"
        )
    }

    @Test func aPoolLargerThanTheServerAllowsIsAProblem() {
        let finding = DoctorCommand.checkPoolSize(16, capacity: Capacity(maxConnections: 15, reserved: 3, open: 1))
        #expect(!finding.ok)
        #expect(finding.message.hasPrefix("each instance may open 16 connections, but PostgreSQL allows this login 12"))
    }

    @Test func aPoolLargerThanWhatIsFreeNowIsAProblem() {
        // 90 of 97 taken (the check's own connection is the 91st): 7 free, fewer than one more instance may open.
        let capacity = Capacity(maxConnections: 100, reserved: 3, open: 91)
        #expect(capacity.free == 7)
        let finding = DoctorCommand.checkPoolSize(16, capacity: capacity)
        #expect(!finding.ok)
        #expect(finding.message.contains("only 7 are free now"))
        #expect(finding.message.contains("90 open by other clients"))
        #expect(DoctorCommand.checkPoolSize(7, capacity: capacity).ok, "a pool of what is free fits")
    }

    @Test func aSuperuserCountsNoReservedSlots() {
        // `connectionCapacity` reports no reserved slots for a superuser login.
        let finding = DoctorCommand.checkPoolSize(100, capacity: Capacity(maxConnections: 100, reserved: 0, open: 1))
        #expect(finding.ok)
        #expect(finding.message.contains("allows this login 100 connections (max_connections 100)"))
    }
}
