/// "Did you mean" candidates by edit distance.
enum Suggestions {
    /// The closest candidate within a distance of about a third of the word (at least 1, at most 3), if any.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let limit = min(3, max(1, word.count / 3))
        var best: (String, Int)?
        for candidate in candidates {
            let distance = editDistance(word, candidate)
            if distance <= limit, distance < (best?.1 ?? .max) { best = (candidate, distance) }
        }
        if let best { return best.0 }
        // A unique candidate that the word is a prefix of (`--recur` → `--recursive`).
        let prefixed = candidates.filter { $0.hasPrefix(word) && word.count >= 2 }
        return prefixed.count == 1 ? prefixed[0] : nil
    }

    /// Levenshtein distance over characters, with adjacent transpositions counted as one edit.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
