import CBOR
import FIDOSimulation
import Foundation
import TestSupport
import XCTest

/// Our CBOR decoder and encoder against an independent implementation (Python's cbor2, installed from PyPI by
/// `.ci/run`), on generated inputs, in both directions, and on mutated inputs.
final class CBORInteroperabilityTests: XCTestCase {
    private var script: String {
        ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/cbor_interop.py").path
    }

    override func setUpWithError() throws {
        if case .skipped(let why) = try ExternalTool.require("python3 with cbor2", probe: ["python3", script, "check"]) {
            throw XCTSkip(why)
        }
    }

    private func peer(_ arguments: [String], stdin: String? = nil) throws -> [Substring] {
        let output = try ExternalProgram.run(["python3", script] + arguments, stdin: stdin.map { Array($0.utf8) })
        guard output.status == 0 else { throw ExternalProgram.Failure("cbor2 failed: \(output.stderr)") }
        return output.stdout.split(separator: "\n")
    }

    /// cbor2's decoding of each hex line: its rendering and canonical re-encoding, or nil where it refused.
    private func cbor2Decodes(_ inputs: [[UInt8]]) throws -> [(rendering: Rendering, canonical: [UInt8])?] {
        let lines = try peer(["decode"], stdin: inputs.map { "x" + Hex.encode($0) }.joined(separator: "\n") + "\n")
        XCTAssertEqual(lines.count, inputs.count)
        return try lines.map { line in
            let fields = line.split(separator: " ", maxSplits: 1)
            if fields.first == "error" { return nil }
            return (try Rendering.parse(fields[1]), try XCTUnwrap(Hex.decode(fields[0])))
        }
    }

    static let decoder = CBORDecoder(rules: .canonical), lenient = CBORDecoder(rules: .wellFormed)
    /// What ours refuses and cbor2 accepts, on purpose: indefinite lengths, a repeated key, more than one item, nesting
    /// past the limit, and a simple value below 32 in two bytes.
    static let stricterOnPurpose: [CBORError.Reason] =
        [.indefiniteLength, .duplicateMapKey, .trailingBytes, .tooDeep(limit: lenient.maximumDepth)] + (0..<32).map { .invalidSimpleValue($0) }

    func testWeDecodeWhatCbor2EncodesAndEncodeItAsCbor2Does() throws {
        let lines = try peer(["generate", "3000", "20261126"])
        XCTAssertEqual(lines.count, 3000)
        var reordered = 0
        for line in lines {
            let fields = line.split(separator: " ", maxSplits: 2)
            let canonical = try XCTUnwrap(Hex.decode(fields[0]))
            let other = try XCTUnwrap(Hex.decode(fields[1]))
            let expected = try Rendering.parse(fields[2])
            let value = try Self.decoder.decode(canonical)
            XCTAssertEqual(Rendering(value), expected, "canonical \(fields[0])")
            XCTAssertEqual(CBOREncoder.encode(value), canonical, "our canonical encoding differs from cbor2's for \(fields[0])")
            // The same value in another form: read under the well-formed rules, it is written as cbor2 wrote it canonically.
            XCTAssertEqual(CBOREncoder.encode(try Self.lenient.decode(other)), canonical, "well-formed \(fields[1])")
            if other != canonical {
                reordered += 1
                // The same value, not in canonical form (map order, float width): refused under the canonical rules.
                XCTAssertThrowsError(try Self.decoder.decode(other), "accepted as canonical: \(fields[1])") { error in
                    XCTAssertTrue([.notShortest, .mapKeysOutOfOrder].contains((error as? CBORError)?.reason), "\(error)")
                }
            }
        }
        XCTAssertGreaterThan(reordered, 100, "too few non-canonical inputs to mean anything")
    }

    func testCbor2DecodesWhatWeEncode() throws {
        var random = SeededRandom(seed: 59)
        let values = (0..<2000).map { _ in RandomCBOR.value(&random, depth: 0) }
        let encoded = values.map(CBOREncoder.encode)
        for (index, answer) in try cbor2Decodes(encoded).enumerated() {
            let answer = try XCTUnwrap(answer, "cbor2 refused \(Hex.encode(encoded[index]))")
            // Our value, with its maps in the order they were written (canonical), as cbor2 read it.
            XCTAssertEqual(answer.rendering, Rendering(try Self.decoder.decode(encoded[index])), Hex.encode(encoded[index]))
            XCTAssertEqual(answer.canonical, encoded[index], "cbor2's canonical form differs from ours")
        }
    }

    /// Mutated encodings (a byte changed, dropped or added): wherever we accept, cbor2 reads the same value; where
    /// cbor2 accepts and we refuse, the reason is one of our stricter rules.
    func testOnMutatedInputsWeAcceptNothingCbor2ReadsOtherwise() throws {
        var random = SeededRandom(seed: 2026)
        var inputs: [[UInt8]] = []
        for _ in 0..<4000 {
            var bytes = CBOREncoder.encode(RandomCBOR.value(&random, depth: 0))
            switch random.next() % 3 {
            case 0: bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
            case 1: bytes.remove(at: Int(random.next() % UInt64(bytes.count)))
            default: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: Int(random.next() % UInt64(bytes.count + 1)))
            }
            inputs.append(bytes)
        }
        var (bothAccepted, bothRefused, stricter) = (0, 0, 0)
        var stricterReasons: [String: Int] = [:]
        for (input, answer) in zip(inputs, try cbor2Decodes(inputs)) {
            let ours = Result { try Self.lenient.decode(input) }
            switch (ours, answer) {
            case (.success(let value), let answer?):
                if RandomCBOR.hasOnlyPlainTags(value) {
                    XCTAssertEqual(Rendering(value), answer.rendering, Hex.encode(input))
                }
                bothAccepted += 1
            case (.success(let value), nil):
                // cbor2 gives meaning to some tags (a date, a bignum) and refuses their wrong contents.
                XCTAssertFalse(RandomCBOR.hasOnlyPlainTags(value), "we accept what cbor2 refuses: \(Hex.encode(input))")
            case (.failure(let error), nil):
                _ = error
                bothRefused += 1
            case (.failure(let error), _?):
                // Ours is the stricter reader on purpose: definite lengths, no repeated key, one item, bounded depth.
                let reason = (error as? CBORError)?.reason
                let allowed = reason.map(Self.stricterOnPurpose.contains) ?? false
                XCTAssertTrue(allowed, "cbor2 accepts what we refuse with \(String(describing: reason)): \(Hex.encode(input))")
                stricter += 1
                stricterReasons["\(reason.map { "\($0)" } ?? "?")", default: 0] += 1
            }
        }
        XCTAssertGreaterThan(bothAccepted, 500)
        XCTAssertGreaterThan(bothRefused, 500)
        print(
            "mutated CBOR: both accepted \(bothAccepted), both refused \(bothRefused), only cbor2 accepted \(stricter) \(stricterReasons.sorted { $0.key < $1.key })"
        )
    }
}

/// A CBOR value as the peer script renders it (see Tests/Interop/cbor_interop.py).
indirect enum Rendering: Equatable, Decodable {
    case int(String), bytes(String), text(String), array([Rendering]), map([[Rendering]]), tag(String, Rendering)
    case simple(Int), bool(Bool), null, undefined, float(String)

    private enum Key: String, CodingKey { case int, bytes, text, array, map, tag, value, simple, undefined, float }

    static func parse(_ json: Substring) throws -> Rendering { try JSONDecoder().decode(Rendering.self, from: Data(json.utf8)) }

    init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
            return
        }
        if let flag = try? single.decode(Bool.self) {
            self = .bool(flag)
            return
        }
        let object = try decoder.container(keyedBy: Key.self)
        if let value = try object.decodeIfPresent(String.self, forKey: .int) {
            self = .int(value)
        } else if let value = try object.decodeIfPresent(String.self, forKey: .bytes) {
            self = .bytes(value)
        } else if let value = try object.decodeIfPresent(String.self, forKey: .text) {
            self = .text(value)
        } else if let value = try object.decodeIfPresent([Rendering].self, forKey: .array) {
            self = .array(value)
        } else if let value = try object.decodeIfPresent([[Rendering]].self, forKey: .map) {
            self = .map(value)
        } else if let tag = try object.decodeIfPresent(String.self, forKey: .tag) {
            self = .tag(tag, try object.decode(Rendering.self, forKey: .value))
        } else if let value = try object.decodeIfPresent(Int.self, forKey: .simple) {
            self = .simple(value)
        } else if try object.decodeIfPresent(Bool.self, forKey: .undefined) != nil {
            self = .undefined
        } else {
            self = .float(try object.decode(String.self, forKey: .float))
        }
    }

    init(_ value: CBOR) {
        switch value {
        case .unsigned(let n): self = .int(String(n))
        case .negative(let n): self = .int(n == .max ? "-18446744073709551616" : "-\(n + 1)")
        case .bytes(let bytes): self = .bytes(Hex.encode(bytes))
        case .text(let text): self = .text(text)
        case .array(let items): self = .array(items.map(Rendering.init))
        case .map(let map): self = .map(map.entries.map { [Rendering($0.key), Rendering($0.value)] })
        case .tagged(let tag, let item): self = .tag(String(tag), Rendering(item))
        case .simple(let n): self = .simple(Int(n))
        case .bool(let flag): self = .bool(flag)
        case .null: self = .null
        case .undefined: self = .undefined
        case .float(let number):
            let hex = String(number.bitPattern, radix: 16)
            self = .float(number.isNaN ? "nan" : String(repeating: "0", count: 16 - hex.count) + hex)
        }
    }
}

enum RandomCBOR {
    /// Tags cbor2 gives no meaning to (as in the peer script).
    static let plainTags: Set<UInt64> = [6, 7, 15, 16, 17, 18, 96, 1000, 40000, 0xFFFF, 0x10000, (1 << 32) + 5]

    static func value(_ random: inout SeededRandom, depth: Int) -> CBOR {
        let kinds = depth < 4 ? 12 : 9
        switch Int(random.next() % UInt64(kinds)) {
        case 0: return .unsigned(integer(&random))
        case 1: return .negative(integer(&random))
        case 2: return .bytes((0..<[0, 1, 5, 24, 300][Int(random.next() % 5)]).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        case 3:
            let alphabet = Array("abz é€😀\u{0}\"\\\u{202E}")
            return .text(String((0..<Int(random.next() % 10)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }))
        case 4:
            let choices: [Double] = [
                0, -0.0, 1, 1.5, -2.75, 65504, 0x1p-24, 0.1, 1e300, .infinity, -.infinity, .nan,
                Double(Float(0.3)), Double(random.next() % 1_000_000) / 7,
            ]
            return .float(choices[Int(random.next() % UInt64(choices.count))])
        case 5: return .bool(random.next() % 2 == 0)
        case 6: return random.next() % 2 == 0 ? .null : .undefined
        case 7: return .simple([0, 5, 19, 32, 100, 255][Int(random.next() % 6)])
        case 8: return .text("")
        case 9: return .array((0..<[0, 1, 3, 24][Int(random.next() % 4)]).map { _ in value(&random, depth: depth + 1) })
        case 10:
            var entries: [CBORMap.Entry] = []
            var keys = Set<CBOR>()
            for _ in 0..<[0, 1, 4, 25][Int(random.next() % 4)] {
                let key: CBOR = random.next() % 2 == 0 ? .unsigned(random.next() % 300) : .text(String(random.next() % 1000))
                if keys.insert(key).inserted { entries.append(CBORMap.Entry(key, value(&random, depth: depth + 1))) }
            }
            return .map(CBORMap(entries))
        default:
            let tags = Array(plainTags).sorted()
            return .tagged(tags[Int(random.next() % UInt64(tags.count))], value(&random, depth: depth + 1))
        }
    }

    static func integer(_ random: inout SeededRandom) -> UInt64 {
        let bound: [UInt64] = [24, 256, 65536, 1 << 32, .max]
        let limit = bound[Int(random.next() % 5)]
        return limit == .max ? random.next() : random.next() % limit
    }

    static func hasOnlyPlainTags(_ value: CBOR) -> Bool {
        switch value {
        case .tagged(let tag, let item): return plainTags.contains(tag) && hasOnlyPlainTags(item)
        case .array(let items): return items.allSatisfy(hasOnlyPlainTags)
        case .map(let map): return map.entries.allSatisfy { hasOnlyPlainTags($0.key) && hasOnlyPlainTags($0.value) }
        default: return true
        }
    }
}
