import SiloCore
import Testing

@testable import SiloPostgres
@testable import SiloSQLite

/// A store refusing the server itself (a read-only database file, a role without a grant) is a server
/// fault, 500 — never the 403 a caller would read as its own missing permission; a full disk is 507.
@Suite struct ErrorMappingTests {
    @Test(
        arguments: [(8, "read-only"), (3, "access permission denied"), (23, "authorization denied")]
            as [(Int32, String)])
    func sqlitePermissionFaultsAreServerFaults(code: Int32, message: String) {
        let error = SQLiteError(extendedCode: code, message: message).storageError("writing")
        #expect(error.code == .ioError)
    }

    @Test func sqliteFullIsInsufficientStorage() {
        #expect(
            SQLiteError(extendedCode: 13, message: "database or disk is full").storageError("x").code
                == .insufficientStorage)
    }

    @Test(arguments: ["42501", "28000", "28P01"])
    func postgresPermissionFaultsAreServerFaults(state: String) {
        #expect(PostgresError(sqlState: state, message: "permission denied").storageError("x").code == .internalError)
    }

    @Test func postgresDiskFullIsInsufficientStorage() {
        #expect(
            PostgresError(sqlState: "53100", message: "could not extend file").storageError("x").code
                == .insufficientStorage)
    }
}
