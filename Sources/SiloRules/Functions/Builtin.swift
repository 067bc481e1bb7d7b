/// Global functions and namespace functions, resolved by name at compile time.
enum Builtin: String, Sendable, CaseIterable {
    case int, float, string, bool, path, debug
    case mathAbs = "math.abs"
    case mathCeil = "math.ceil"
    case mathFloor = "math.floor"
    case mathRound = "math.round"
    case mathSqrt = "math.sqrt"
    case mathPow = "math.pow"
    case mathIsInfinite = "math.isInfinite"
    case mathIsNaN = "math.isNaN"
    case durationValue = "duration.value"
    case durationTime = "duration.time"
    case durationAbs = "duration.abs"
    case timestampDate = "timestamp.date"
    case timestampValue = "timestamp.value"
    case latlngValue = "latlng.value"
    case hashingCrc32 = "hashing.crc32"
    case hashingCrc32c = "hashing.crc32c"
    case hashingMd5 = "hashing.md5"
    case hashingSha256 = "hashing.sha256"
    case firestoreGet = "firestore.get"
    case firestoreExists = "firestore.exists"

    static let globalNames: Set<String> = ["int", "float", "string", "bool", "path", "debug"]
    static let namespaces: Set<String> = ["math", "hashing", "timestamp", "duration", "latlng", "firestore"]

    var arity: Int {
        switch self {
        case .mathPow, .durationValue, .latlngValue: 2
        case .timestampDate: 3
        case .durationTime: 4
        default: 1
        }
    }
}

/// Methods, resolved by name at compile time; which receiver types accept them is decided at run time because
/// types are dynamic, so an unknown name is `.unknown` and evaluates to ⊥.
enum Method: String, Sendable {
    case size, lower, upper, trim, matches, replace, split, toUtf8, toBase64, toHexString
    case concat, hasAll, hasAny, hasOnly, join, removeAll, toSet
    case keys, values, diff, get
    case union, intersection, difference
    case addedKeys, removedKeys, changedKeys, unchangedKeys, affectedKeys
    case year, month, day, hours, minutes, seconds, nanos, dayOfWeek, dayOfYear, date, time, toMillis
    case latitude, longitude, distance
    case unknown
}
