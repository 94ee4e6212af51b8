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
        #expect(finding.note == nil)
        #expect(
            finding.message
                == "up to 17 connections per instance (16 pooled, 1 listening): PostgreSQL allows this login 97 "
                + "connections (max_connections 100, 3 reserved), room for 5 instance(s) with no other client; 0 open "
                + "now by other clients"
        )
    }

    @Test func aPoolLargerThanTheServerAllowsIsAProblem() {
        let finding = DoctorCommand.checkPoolSize(16, capacity: Capacity(maxConnections: 15, reserved: 3, open: 1))
        #expect(!finding.ok)
        #expect(
            finding.message.hasPrefix(
                "each instance may open 17 connections (16 pooled, 1 listening), but PostgreSQL allows this login 12"
            )
        )
    }

    @Test func theLoginsAndTheDatabasesConnectionLimitsCount() {
        let role = Capacity(maxConnections: 100, reserved: 3, roleLimit: 10, open: 1)
        #expect(role.available == 10)
        let refused = DoctorCommand.checkPoolSize(16, capacity: role)
        #expect(!refused.ok)
        #expect(refused.message.contains("the login's CONNECTION LIMIT 10"))

        let database = Capacity(maxConnections: 100, reserved: 3, databaseLimit: 20, open: 9, openForDatabase: 9)
        #expect(database.available == 20)
        #expect(database.free == 12, "8 others on this database, the check's own not counted")
        #expect(DoctorCommand.checkPoolSize(16, capacity: database).message.contains("only 12 are free now"))
    }

    @Test func aPoolLargerThanWhatIsFreeNowIsANote() {
        // 90 of 97 taken (the check's own connection is the 91st): 7 free, fewer than one more instance may open. The
        // running instances count among the 90, so this is a remark, not a problem.
        let capacity = Capacity(maxConnections: 100, reserved: 3, open: 91, hidden: 4)
        #expect(capacity.free == 7)
        let finding = DoctorCommand.checkPoolSize(16, capacity: capacity)
        #expect(finding.ok)
        #expect(finding.note == true)
        #expect(finding.message.contains("only 7 are free now"))
        #expect(finding.message.contains("90 are open by other clients"))
        #expect(finding.message.contains("4 of them are other logins' sessions this one may not see"))
        #expect(
            DoctorCommand.checkPoolSize(6, capacity: capacity).note == nil,
            "a pool and its listening connection of what is free fit"
        )
    }

    @Test func aSuperuserCountsNoReservedSlots() {
        // `connectionCapacity` reports no reserved slots and no connection limits for a superuser login.
        let finding = DoctorCommand.checkPoolSize(99, capacity: Capacity(maxConnections: 100, reserved: 0, open: 1))
        #expect(finding.ok)
        #expect(finding.message.contains("allows this login 100 connections (max_connections 100)"))
    }
}
