import Foundation
import SecureStorage

/// Issue 2's benchmark: a store of 1,000 entries (~64 KiB).
enum StorageBench {
    static func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let location = StoreLocation(directory: directory, name: "bench")
        let cost = 1 << 15
        let protector = try SoftwareKeyProtector(iterationCount: cost)
        let store = try await SecureStore.create(at: location, fingerprint: "bench-device", protector: protector)
        for i in 0..<1000 {
            try await store.set((0..<64).map { UInt8(truncatingIfNeeded: $0 &+ i) }, for: "entry-\(i)")
        }
        try await store.write()
        let size = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("bench.mauthstore").path)[.size] as? Int ?? 0
        print("SecureStorage: 1,000 entries of 64-byte values (62.5 KiB of data), file \(size) bytes (\(size / 1024) KiB), scrypt N=\(cost) r=8 p=1")

        // Open without the KDF: the protector has the KEK cached from the first derivation.
        var opens: [Double] = []
        for _ in 0..<50 {
            opens.append(try await Measure.nanoseconds { _ = try await SecureStore.open(at: location, fingerprint: "bench-device", protector: protector) })
        }
        Measure.report("open, KDF excluded (median of 50)", Measure.median(opens), target: 5e6)

        // get of a random entry.
        let reopened = try await SecureStore.open(at: location, fingerprint: "bench-device", protector: protector)
        var gets: [Double] = []
        for i in 0..<20_000 {
            let key = "entry-\((i &* 7919) % 1000)"
            gets.append(try await Measure.nanoseconds { _ = try await reopened.bytes(for: key) })
        }
        Measure.report("get (median of 20,000)", Measure.median(gets), target: 10e3)

        // Durable write: change one entry and commit (atomic replace, fsync, rename, directory fsync, anchor).
        var writes: [Double] = []
        for i in 0..<200 {
            try await reopened.set(Array("value-\(i)".utf8), for: "entry-\(i % 1000)")
            writes.append(try await Measure.nanoseconds { try await reopened.write() })
        }
        Measure.report("durable write of 1 change (median of 200)", Measure.median(writes), target: 3e6)

        // The same with the KDF: a fresh protector must derive the KEK (scrypt) on open.
        var coldOpens: [Double] = []
        for _ in 0..<5 {
            let fresh = try SoftwareKeyProtector(iterationCount: cost)
            coldOpens.append(try await Measure.nanoseconds { _ = try await SecureStore.open(at: location, fingerprint: "bench-device", protector: fresh) })
        }
        Measure.report("open, KDF included (median of 5)", Measure.median(coldOpens))
        let cold = try await SecureStore.open(at: location, fingerprint: "bench-device", protector: try SoftwareKeyProtector(iterationCount: cost))
        var coldGets: [Double] = []
        for i in 0..<20_000 {
            let key = "entry-\((i &* 104_729) % 1000)"
            coldGets.append(try await Measure.nanoseconds { _ = try await cold.bytes(for: key) })
        }
        Measure.report("get after a KDF open (median of 20,000)", Measure.median(coldGets))
        var coldWrites: [Double] = []
        for i in 0..<20 {
            try await cold.set(Array("cold-\(i)".utf8), for: "entry-\(i)")
            coldWrites.append(try await Measure.nanoseconds {
                try await cold.write()
            })
        }
        Measure.report("durable write after a KDF open (median of 20)", Measure.median(coldWrites))
        var openAndWrite: [Double] = []
        for i in 0..<5 {
            let fresh = try SoftwareKeyProtector(iterationCount: cost)
            openAndWrite.append(try await Measure.nanoseconds {
                let s = try await SecureStore.open(at: location, fingerprint: "bench-device", protector: fresh)
                try await s.set(Array("x\(i)".utf8), for: "entry-1")
                try await s.write()
            })
        }
        Measure.report("open with KDF + 1 durable write (median of 5)", Measure.median(openAndWrite))
    }
}
