import SiloCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Methods by receiver type. The receiver and arguments are never ⊥ here.
enum Methods {
    static func fault(_ m: String, _ at: Int) -> RulesValue { .error(RulesFault(m, offset: at)) }

    static func call(
        _ method: Method, _ receiver: RulesValue, _ args: [RulesValue], _ regex: CompiledRegex?, _ at: Int,
        _ interp: Interpreter
    ) -> RulesValue {
        if method == .unknown {
            let name = args.first.flatMap { if case .string(let s) = $0 { s } else { nil } } ?? "?"
            return fault("unknown method '\(name)'", at)
        }
        let result: RulesValue?
        switch receiver {
        case .string(let s): result = string(method, s, args, regex, at, interp)
        case .bytes(let b): result = bytes(method, b, args, at)
        case .list(let l): result = list(method, l, args, at, interp)
        case .set(let l): result = set(method, l, args, at, interp)
        case .map(let m): result = map(method, m, args, at, interp)
        case .mapDiff(let l, let r): result = mapDiff(method, l, r, args, at)
        case .timestamp(let t): result = timestamp(method, t, args, at)
        case .duration(let d): result = duration(method, d, args, at)
        case .latlng(let lat, let lng): result = latlng(method, lat, lng, args, at)
        case .path(let p): result = method == .size && args.isEmpty ? .int(Int64(p.count)) : nil
        default: result = nil
        }
        return result
            ?? fault("\(receiver.typeName) has no method '\(method.rawValue)' taking \(args.count) arguments", at)
    }

    // MARK: string

    private static func regexFor(_ pattern: RulesValue, _ compiled: CompiledRegex?, _ at: Int) -> Result<
        CompiledRegex, RulesFault
    > {
        if let compiled { return .success(compiled) }
        guard case .string(let p) = pattern else { return .failure(RulesFault("regex must be a string", offset: at)) }
        do {
            return .success(try CompiledRegex(pattern: p))
        } catch {
            return .failure(RulesFault("invalid regex: \(error.message)", offset: at))
        }
    }

    private static func string(
        _ method: Method, _ s: String, _ args: [RulesValue], _ compiled: CompiledRegex?, _ at: Int,
        _ interp: Interpreter
    ) -> RulesValue? {
        switch (method, args.count) {
        case (.size, 0): return .int(Int64(s.unicodeScalars.count))
        case (.lower, 0): return .string(s.lowercased())
        case (.upper, 0): return .string(s.uppercased())
        case (.trim, 0):
            let scalars = Array(s.unicodeScalars)
            guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return .string("") }
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
            var out = String.UnicodeScalarView()
            out.append(contentsOf: scalars[first...last])
            return .string(String(out))
        case (.toUtf8, 0): return .bytes(Array(s.utf8))
        case (.matches, 1), (.replace, 2), (.split, 1):
            let regex: CompiledRegex
            switch regexFor(args[0], compiled, at) {
            case .success(let r): regex = r
            case .failure(let f): return .error(f)
            }
            let input = s.unicodeScalars.map(\.value)
            var budget = interp.workLeft
            defer { _ = interp.charge(interp.workLeft - budget) }
            switch method {
            case .matches:
                guard let matched = regex.fullMatch(input, budget: &budget) else {
                    return fault("regex work limit", at)
                }
                return .bool(matched)
            case .replace:
                guard case .string(let replacement) = args[1] else { return nil }
                return replace(input, regex, Array(replacement.unicodeScalars), &budget, at)
            default:
                return split(input, regex, &budget, at)
            }
        default: return nil
        }
    }

    private static func makeString(_ scalars: some Sequence<UInt32>) -> String {
        var view = String.UnicodeScalarView()
        for v in scalars { view.append(Unicode.Scalar(v)!) }
        return String(view)
    }

    /// Replaces every leftmost-first match; the replacement is literal.
    private static func replace(
        _ input: [UInt32], _ regex: CompiledRegex, _ replacement: [Unicode.Scalar], _ budget: inout Int, _ at: Int
    ) -> RulesValue {
        var out: [UInt32] = []
        let rep = replacement.map(\.value)
        var pos = 0
        var copied = 0
        while pos <= input.count {
            switch regex.firstMatch(input, from: pos, budget: &budget) {
            case .exhausted: return fault("regex work limit", at)
            case .noMatch: pos = input.count + 1
            case .match(let r):
                out.append(contentsOf: input[copied..<r.lowerBound])
                out.append(contentsOf: rep)
                if out.count > Limits.maxValueBytes { return fault("string too long", at) }
                if r.isEmpty {
                    if r.lowerBound < input.count { out.append(input[r.lowerBound]) }
                    copied = min(r.lowerBound + 1, input.count)
                    pos = r.lowerBound + 1
                } else {
                    copied = r.upperBound
                    pos = r.upperBound
                }
            }
        }
        out.append(contentsOf: input[copied...])
        return .string(makeString(out))
    }

    /// Splits like Java's `String.split`: interior empty pieces stay, trailing empty pieces are dropped, and an
    /// empty match at the very start produces no leading empty piece (Firebase does not document trailing empties).
    private static func split(_ input: [UInt32], _ regex: CompiledRegex, _ budget: inout Int, _ at: Int)
        -> RulesValue
    {
        var pieces: [String] = []
        var last = 0
        var pos = 0
        while pos <= input.count {
            switch regex.firstMatch(input, from: pos, budget: &budget) {
            case .exhausted: return fault("regex work limit", at)
            case .noMatch: pos = input.count + 1
            case .match(let r):
                if r.isEmpty {
                    if r.lowerBound >= input.count {
                        pos = input.count + 1
                        continue
                    }
                    if r.lowerBound > 0 {
                        pieces.append(makeString(input[last..<r.lowerBound]))
                        last = r.lowerBound
                    }
                    pos = r.lowerBound + 1
                } else {
                    pieces.append(makeString(input[last..<r.lowerBound]))
                    last = r.upperBound
                    pos = r.upperBound
                }
            }
        }
        if pieces.isEmpty { return .list([.string(makeString(input))]) }
        pieces.append(makeString(input[last...]))
        while pieces.count > 1, pieces.last == "" { pieces.removeLast() }
        return .list(pieces.map { .string($0) })
    }

    // MARK: bytes

    private static func bytes(_ method: Method, _ b: [UInt8], _ args: [RulesValue], _ at: Int) -> RulesValue? {
        guard args.isEmpty else { return nil }
        switch method {
        case .size: return .int(Int64(b.count))
        case .toBase64:
            // The base64url alphabet with padding (b'\xFB\xEF\xBE' → '----').
            return .string(String(Base64.encode(b).map { $0 == "+" ? "-" : ($0 == "/" ? "_" : $0) }))
        case .toHexString:
            let digits = Array("0123456789ABCDEF")
            return .string(String(b.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }))
        default: return nil
        }
    }

    // MARK: list and set

    private static func elements(_ v: RulesValue) -> [RulesValue]? {
        switch v {
        case .list(let l), .set(let l): l
        default: nil
        }
    }

    private static func list(
        _ method: Method, _ l: [RulesValue], _ args: [RulesValue], _ at: Int, _ interp: Interpreter
    ) -> RulesValue? {
        switch (method, args.count) {
        case (.size, 0): return .int(Int64(l.count))
        case (.toSet, 0):
            guard interp.charge(l.count * l.count) else { return fault("work limit exceeded", at) }
            return .set(makeSet(l))
        case (.concat, 1):
            guard case .list(let other) = args[0] else { return nil }
            guard l.count + other.count <= Limits.maxCollectionCount else { return fault("list too long", at) }
            return .list(l + other)
        case (.join, 0), (.join, 1):
            var separator = ""
            if args.count == 1 {
                guard case .string(let s) = args[0] else { return nil }
                separator = s
            }
            var parts: [String] = []
            var total = 0
            for e in l {
                guard case .string(let s) = e else { return fault("join needs a list of strings", at) }
                total += s.utf8.count + separator.utf8.count
                if total > Limits.maxValueBytes { return fault("string too long", at) }
                parts.append(s)
            }
            return .string(parts.joined(separator: separator))
        case (.removeAll, 1):
            guard let other = elements(args[0]) else { return nil }
            guard interp.charge(l.count * other.count) else { return fault("work limit exceeded", at) }
            return .list(l.filter { !Compare.contains(other, $0) })
        case (.hasAll, 1), (.hasAny, 1), (.hasOnly, 1):
            return membership(method, l, args[0], at, interp)
        default: return nil
        }
    }

    private static func membership(
        _ method: Method, _ own: [RulesValue], _ arg: RulesValue, _ at: Int, _ interp: Interpreter
    ) -> RulesValue? {
        guard let other = elements(arg) else { return nil }
        guard interp.charge(own.count * other.count) else { return fault("work limit exceeded", at) }
        switch method {
        case .hasAll: return .bool(other.allSatisfy { Compare.contains(own, $0) })
        case .hasAny: return .bool(other.contains { Compare.contains(own, $0) })
        default: return .bool(own.allSatisfy { Compare.contains(other, $0) })
        }
    }

    private static func set(
        _ method: Method, _ s: [RulesValue], _ args: [RulesValue], _ at: Int, _ interp: Interpreter
    ) -> RulesValue? {
        switch (method, args.count) {
        case (.size, 0): return .int(Int64(s.count))
        case (.hasAll, 1), (.hasAny, 1), (.hasOnly, 1): return membership(method, s, args[0], at, interp)
        case (.union, 1), (.intersection, 1), (.difference, 1):
            guard let other = elements(args[0]) else { return nil }
            guard interp.charge((s.count + other.count) * (s.count + other.count)) else {
                return fault("work limit exceeded", at)
            }
            switch method {
            case .union: return .set(makeSet(s + other))
            case .intersection: return .set(s.filter { Compare.contains(other, $0) })
            default: return .set(s.filter { !Compare.contains(other, $0) })
            }
        default: return nil
        }
    }

    // MARK: map and map_diff

    private static func map(
        _ method: Method, _ m: [String: RulesValue], _ args: [RulesValue], _ at: Int, _ interp: Interpreter
    ) -> RulesValue? {
        switch (method, args.count) {
        case (.size, 0): return .int(Int64(m.count))
        // Sorted so that results (and `keys()[0]`) are deterministic.
        case (.keys, 0): return .list(m.keys.sorted().map { .string($0) })
        case (.values, 0): return .list(m.keys.sorted().map { m[$0]! })
        case (.diff, 1):
            guard case .map(let other) = args[0] else { return nil }
            return .mapDiff(left: m, right: other)
        case (.get, 2):
            switch args[0] {
            case .string(let k): return m[k] ?? args[1]
            case .list(let keys):
                var current = RulesValue.map(m)
                for key in keys {
                    guard case .string(let k) = key else { return fault("get() key path must hold strings", at) }
                    guard case .map(let inner) = current, let next = inner[k] else { return args[1] }
                    current = next
                }
                return current
            default: return nil
            }
        default: return nil
        }
    }

    private static func mapDiff(
        _ method: Method, _ l: [String: RulesValue], _ r: [String: RulesValue], _ args: [RulesValue], _ at: Int
    ) -> RulesValue? {
        guard args.isEmpty else { return nil }
        let keys: [String]
        switch method {
        case .addedKeys: keys = l.keys.filter { r[$0] == nil }
        case .removedKeys: keys = r.keys.filter { l[$0] == nil }
        case .changedKeys: keys = l.keys.filter { k in r[k].map { !Compare.equal(l[k]!, $0) } ?? false }
        case .unchangedKeys: keys = l.keys.filter { k in r[k].map { Compare.equal(l[k]!, $0) } ?? false }
        case .affectedKeys:
            keys =
                l.keys.filter { k in r[k].map { !Compare.equal(l[k]!, $0) } ?? true }
                + r.keys.filter { l[$0] == nil }
        default: return nil
        }
        return .set(keys.sorted().map { .string($0) })
    }

    // MARK: time and place

    private static func timestamp(_ method: Method, _ t: TimeValue, _ args: [RulesValue], _ at: Int) -> RulesValue? {
        guard args.isEmpty else { return nil }
        let c = Time.components(t)
        switch method {
        case .year: return .int(c.year)
        case .month: return .int(c.month)
        case .day: return .int(c.day)
        case .hours: return .int(c.secondOfDay / 3600)
        case .minutes: return .int(c.secondOfDay / 60 % 60)
        case .seconds: return .int(c.secondOfDay % 60)
        case .nanos: return .int(Int64(t.nanos))
        // 1970-01-01 was a Thursday; Monday is 1.
        case .dayOfWeek: return .int((c.dayNumber % 7 + 7 + 3) % 7 + 1)
        case .dayOfYear: return .int(c.dayNumber - Time.days(year: c.year, month: 1, day: 1) + 1)
        case .date: return .timestamp(TimeValue(seconds: c.dayNumber * 86_400, nanos: 0))
        case .time: return .duration(TimeValue(seconds: c.secondOfDay, nanos: t.nanos))
        case .toMillis: return .int(t.seconds * 1000 + Int64(t.nanos) / 1_000_000)
        default: return nil
        }
    }

    private static func duration(_ method: Method, _ d: TimeValue, _ args: [RulesValue], _ at: Int) -> RulesValue? {
        guard args.isEmpty else { return nil }
        let parts = Time.signedParts(d)
        switch method {
        case .seconds: return .int(parts.seconds)
        case .nanos: return .int(parts.nanos)
        default: return nil
        }
    }

    private static func latlng(_ method: Method, _ lat: Double, _ lng: Double, _ args: [RulesValue], _ at: Int)
        -> RulesValue?
    {
        switch (method, args.count) {
        case (.latitude, 0): return .float(lat)
        case (.longitude, 0): return .float(lng)
        case (.distance, 1):
            guard case .latlng(let lat2, let lng2) = args[0] else { return nil }
            // Haversine on a sphere of the mean Earth radius.
            let rad = Double.pi / 180
            let dLat = (lat2 - lat) * rad
            let dLng = (lng2 - lng) * rad
            let h = sin(dLat / 2) * sin(dLat / 2) + cos(lat * rad) * cos(lat2 * rad) * sin(dLng / 2) * sin(dLng / 2)
            return .float(2 * 6_371_008.8 * asin(min(1, h.squareRoot())))
        default: return nil
        }
    }
}
