import SiloCore
import Testing

@Suite struct MetricsTextTests {
    @Test("label values are escaped as the exposition format wants: backslash, quote, newline")
    func escaping() {
        var text = MetricsText()
        text.family("x_total", .counter, help: "a\\b\nc")
        text.sample("x_total", ["v": "a\"b\\c\nd"], UInt64(3))
        #expect(
            String(decoding: text.bytes, as: UTF8.self)
                == "# HELP x_total a\\\\b\\nc\n# TYPE x_total counter\nx_total{v=\"a\\\"b\\\\c\\nd\"} 3\n")
    }

    @Test("a histogram's buckets are cumulative, end in +Inf and agree with _count")
    func histogram() {
        var text = MetricsText()
        text.histogram("h", ["a": "b"], bounds: [0.5, 1], counts: [2, 0, 3], sum: 4.25)
        #expect(
            String(decoding: text.bytes, as: UTF8.self)
                == """
                h_bucket{a="b",le="0.5"} 2
                h_bucket{a="b",le="1"} 2
                h_bucket{a="b",le="+Inf"} 5
                h_sum{a="b"} 4.25
                h_count{a="b"} 5

                """)
    }

    @Test("counters add from many threads without losing an increment")
    func atomicCounters() async {
        let counters = AtomicCounters(count: 4)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { for _ in 0..<10_000 { counters.add(2) } } }
        }
        #expect(counters[2] == 80_000 && counters[0] == 0)
    }
}
