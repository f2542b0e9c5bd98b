import Foundation
import Primitives
import TestSupport
import UAF
import WireJSON
import XCTest

/// The wire JSON codec against Foundation's, the independent implementation it replaces on the hot path: the encoder
/// must write the very bytes `JSONEncoder` writes with `[.sortedKeys, .withoutEscapingSlashes]`; the decoder must give
/// the values `JSONDecoder` gives for every input it accepts, and refuse what it documents it refuses.
final class WireJSONTests: XCTestCase {
    func assertSameBytes<T: Encodable>(_ value: T, file: StaticString = #filePath, line: UInt = #line) throws {
        let expected = String(decoding: try foundationWireEncoder().encode(value), as: UTF8.self)
        XCTAssertEqual(try WireJSONEncoder().encodeToString(value), expected, file: file, line: line)
    }

    func assertSameValue<T: Decodable & Equatable>(_ type: T.Type, _ json: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let expected = try JSONDecoder().decode(T.self, from: Data(json.utf8))
        XCTAssertEqual(try WireJSONDecoder().decode(T.self, from: json), expected, file: file, line: line)
    }

    func assertRefused<T: Decodable>(_ type: T.Type, _ json: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try WireJSONDecoder().decode(T.self, from: json), file: file, line: line) { error in
            XCTAssertTrue(error is DecodingError, "\(error)", file: file, line: line)
        }
    }

    func assertRefused<T: Decodable>(_ type: T.Type, _ json: String, file: StaticString = #filePath, line: UInt = #line) {
        assertRefused(type, Array(json.utf8), file: file, line: line)
    }

    // MARK: - free-form values

    /// `JSONValue` through the wire decoder is read by the parsed kind of each value; through Foundation's decoder it
    /// is read by trial, an independent path: both give the same values for every kind, nested.
    func testAFreeFormValueReadsAsFoundationReadsIt() throws {
        for json in [
            #"{"a":true,"b":false,"c":null,"d":1.5,"e":-2,"f":"text \u00e9\n","g":[1,"x",[],{}],"h":{"i":{"j":[null]}}}"#,
            #"[]"#, #"[1e300,-0,0.1]"#, #"{}"#, #"{"k":""}"#,
        ] {
            try assertSameValue(JSONValue.self, json)
            try assertSameValue([String: JSONValue]?.self, json.hasPrefix("{") ? json : "null")
        }
    }

    /// A number no `Double` holds is refused, as decoding it as `Double` is (by trial it was refused as a whole).
    func testAFreeFormNumberOutsideDoubleIsRefused() {
        assertRefused(JSONValue.self, #"{"n":1e400}"#)
        assertRefused(JSONValue.self, #"[1e-400]"#)
    }

    /// An object of 30,000 empty objects, the shape of a padded `clientExtensionResults`, reads to the same value.
    func testAWideFreeFormObjectReadsWhole() throws {
        let json = "{" + (0..<30_000).map { #""m\#($0)":{}"# }.joined(separator: ",") + "}"
        guard case .object(let members) = try WireJSONDecoder().decode(JSONValue.self, from: json) else { return XCTFail("not an object") }
        XCTAssertEqual(members.count, 30_000)
        XCTAssertEqual(members["m29999"], .object([:]))
    }

    // MARK: - messages

    static let appID = "https://rp.example/nevisfido/uaf/1.1/facets"

    /// The UAF specification's example messages, kept once with the UAF tests.
    static let specVectors = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/UAFTests/Vectors")

    static func messages() throws -> (AuthenticationRequest, RegistrationRequest, DeregistrationRequest, AuthenticationResponse, RegistrationResponse)
    {
        let header = OperationHeader(
            op: .authentication, appID: appID, serverData: "c2VydmVy",
            exts: [Extension(id: "e/1", data: "ZGF0YQ", failIfUnknown: false)])
        let policy = Policy(
            accepted: [
                [MatchCriteria(aaid: ["ABCD#0001"], keyIDs: ["a2V5"], authenticationAlgorithms: [1, 2])],
                [MatchCriteria(aaid: ["FFFF#FC02"], userVerification: 2, keyProtection: 6, tcDisplay: 1)],
            ],
            disallowed: [MatchCriteria(aaid: ["DEAD#BEEF"])])
        let png = try JSONDecoder().decode(
            DisplayPNGCharacteristicsDescriptor.self,
            from: Data(
                #"""
                {"width":320,"height":480,"bitDepth":8,"colorType":6,"compression":0,"filter":0,"interlace":0,"plte":[{"r":1,"g":2,"b":65535}]}
                """#.utf8))
        let authentication = AuthenticationRequest(
            header: header, challenge: "Y2hhbGxlbmdl",
            transaction: [
                Transaction(contentType: "text/plain", content: "UGF5ICQxMDA"),
                Transaction(contentType: "image/png", content: "iVBO", tcDisplayPNGCharacteristics: png),
            ],
            policy: policy)
        var registrationHeader = header
        registrationHeader.op = .registration
        let registration = RegistrationRequest(header: registrationHeader, challenge: "Y2hhbGxlbmdl", username: "zoë \"the\" user/🚀", policy: policy)
        var deregistrationHeader = header
        deregistrationHeader.op = .deregistration
        let deregistration = DeregistrationRequest(
            header: deregistrationHeader, authenticators: [DeregisterAuthenticator(aaid: "ABCD#0001", keyID: "a2V5")])
        let decoder = JSONDecoder()
        let vectors = Self.specVectors
        let authResponse = try decoder.decode(
            [AuthenticationResponse].self, from: Data(contentsOf: vectors.appendingPathComponent("spec-example-auth-response.json")))[0]
        let regResponse = try decoder.decode(
            [RegistrationResponse].self, from: Data(contentsOf: vectors.appendingPathComponent("spec-example-reg-response.json")))[0]
        return (authentication, registration, deregistration, authResponse, regResponse)
    }

    func testEncoderWritesFoundationsBytesForEveryUAFMessage() throws {
        let (authentication, registration, deregistration, authResponse, regResponse) = try Self.messages()
        try assertSameBytes([authentication])
        try assertSameBytes([registration])
        try assertSameBytes([deregistration])
        try assertSameBytes([authResponse])
        try assertSameBytes([regResponse])
        try assertSameBytes(GetUAFRequest(op: .authentication, context: "{\"username\":\"alice\"}"))
        try assertSameBytes(
            ReturnUAFRequest(statusCode: 1200, uafRequest: try UAFMessageCodec.encode([authentication]), op: .authentication, lifetimeMillis: 120_000)
        )
        try assertSameBytes(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([authResponse])))
        try assertSameBytes(ServerResponse(statusCode: 1200, description: "ok", additionalTokens: [Token(type: .jwt, value: "a.b.c")]))
        try assertSameBytes(FinalChallengeParams(appID: Self.appID, challenge: "Y2hhbGxlbmdl", facetID: Self.appID))
    }

    func testDecoderReadsEveryUAFMessageAsFoundationDoes() throws {
        let (authentication, registration, deregistration, authResponse, regResponse) = try Self.messages()
        let encoder = foundationWireEncoder()
        func text<T: Encodable>(_ value: T) throws -> String { String(decoding: try encoder.encode(value), as: UTF8.self) }
        try assertSameValue([AuthenticationRequest].self, text([authentication]))
        try assertSameValue([RegistrationRequest].self, text([registration]))
        try assertSameValue([DeregistrationRequest].self, text([deregistration]))
        let vectors = Self.specVectors
        try assertSameValue(
            [AuthenticationResponse].self, String(contentsOf: vectors.appendingPathComponent("spec-example-auth-response.json"), encoding: .utf8))
        try assertSameValue(
            [RegistrationResponse].self, String(contentsOf: vectors.appendingPathComponent("spec-example-reg-response.json"), encoding: .utf8))
        try assertSameValue([AuthenticationResponse].self, text([authResponse]))
        try assertSameValue([RegistrationResponse].self, text([regResponse]))
        try assertSameValue(ReturnUAFRequest.self, text(ReturnUAFRequest(statusCode: 1200, uafRequest: "[]", op: .registration, lifetimeMillis: 5)))
        try assertSameValue(ServerResponse.self, #"{"statusCode":1498,"description":"x","unknown":[1,{"a":null}]}"#)
    }

    // MARK: - encoder details

    struct Scalars: Codable, Equatable {
        var int = Int.min, int8 = Int8.min, int16 = Int16.max, int32 = Int32.min, int64 = Int64.max
        var uint = UInt.max, uint8 = UInt8.max, uint16 = UInt16(0), uint32 = UInt32.max, uint64 = UInt64.max
        var flag = true, other = false
        var doubles = [0.0, -0.0, 1.0, 0.1, 1e20, 1e16, 1e-7, 123_456_789.123, 5e-324, 1.7976931348623157e308, -2.5]
        var floats: [Float] = [0.1, 1e10, -3.5, 16_777_216]
        var none: Int? = nil
        var some: String? = "x"
        var nested: [[Int?]] = [[1, nil], [], [3]]
    }

    func testEncoderWritesEveryScalarAsFoundationDoes() throws {
        try assertSameBytes(Scalars())
        try assertSameValue(Scalars.self, String(decoding: try foundationWireEncoder().encode(Scalars()), as: UTF8.self))
    }

    func testEncoderEscapesStringsAsFoundationDoes() throws {
        let controls = String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) })
        try assertSameBytes([controls, "\"quoted\" \\ back/slash", "\u{7F} \u{2028} \u{2029} é 😀 \u{FFFF}", ""])
    }

    func testEncoderWritesFoundationsSpecialTypes() throws {
        struct Special: Codable, Equatable {
            var data = Data([0, 1, 2, 250, 255])
            var date = Date(timeIntervalSinceReferenceDate: 123.25)
            var url = URL(string: "https://rp.example/a/b?c=d")!
            var decimal = Decimal(string: "12.50")!
        }
        try assertSameBytes(Special())
        try assertSameValue(Special.self, String(decoding: try foundationWireEncoder().encode(Special()), as: UTF8.self))
    }

    func testEncoderWritesDatesSince1970AsFoundationDoesWhenAsked() throws {
        let foundation = foundationWireEncoder()
        foundation.dateEncodingStrategy = .secondsSince1970
        let dates = [
            Date(timeIntervalSince1970: 1_795_502_581), Date(timeIntervalSince1970: 1_795_502_581.515), Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: -86_400.25), Date(timeIntervalSinceReferenceDate: 123.25), Date.distantFuture,
        ]
        for date in dates {
            let expected = String(decoding: try foundation.encode(["exp": date]), as: UTF8.self)
            XCTAssertEqual(try WireJSONEncoder(dateEncoding: .secondsSince1970).encodeToString(["exp": date]), expected)
        }
        // The default stays JSONEncoder's default (seconds since 2001), which every wire message uses.
        XCTAssertEqual(try WireJSONEncoder().encodeToString([Date(timeIntervalSince1970: 978_307_200 + 5)]), "[5]")
    }

    func testEncoderSortsKeysByTheirUTF8Bytes() throws {
        try assertSameBytes(["b": 1, "a": 2, "B": 3, "a10": 4, "a9": 5, "é": 6, "😀": 7, "\u{FFFF}": 8, "_": 9, "": 10])
        try assertSameBytes([10: "ten", 2: "two", 1: "one"])
    }

    func testEncoderKeepsTheLastValueOfAKeyWrittenTwice() throws {
        struct Twice: Encodable {
            enum Keys: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(2, forKey: .b)
                try container.encode(1, forKey: .a)
                try container.encode(3, forKey: .b)
            }
        }
        try assertSameBytes(Twice())
        XCTAssertEqual(try WireJSONEncoder().encodeToString(Twice()), #"{"a":1,"b":3}"#)
    }

    func testEncoderWritesNestedContainersInPlace() throws {
        struct Nested: Encodable {
            enum Keys: String, CodingKey { case z, inner, list, tail }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode("last", forKey: .z)
                var inner = container.nestedContainer(keyedBy: Keys.self, forKey: .inner)
                try inner.encode(1, forKey: .tail)
                try inner.encode(2, forKey: .list)
                var list = container.nestedUnkeyedContainer(forKey: .list)
                try list.encode(true)
                var deeper = list.nestedContainer(keyedBy: Keys.self)
                try deeper.encodeNil(forKey: .z)
                try container.encode([1], forKey: .tail)
            }
        }
        try assertSameBytes(Nested())
    }

    func testEncoderWritesAnEmptyObjectForAValueThatEncodesNothing() throws {
        struct Nothing: Encodable { func encode(to encoder: any Encoder) throws {} }
        struct Holder: Encodable {
            var one = Nothing()
            var many = [Nothing(), Nothing()]
        }
        try assertSameBytes(Holder())
        XCTAssertThrowsError(try WireJSONEncoder().encode(Nothing()))
        XCTAssertThrowsError(try foundationWireEncoder().encode(Nothing()))
    }

    func testEncoderRefusesNumbersThatAreNotFinite() {
        for value in [Double.nan, .infinity, -.infinity] {
            XCTAssertThrowsError(try WireJSONEncoder().encode([value])) { XCTAssertTrue($0 is EncodingError) }
            XCTAssertThrowsError(try foundationWireEncoder().encode([value]))
        }
        XCTAssertThrowsError(try WireJSONEncoder().encode(Float.nan))
    }

    func testEncoderRefusesContainersWrittenAfterTheirParentWentOn() {
        struct Interleaved: Encodable {
            enum Keys: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                var inner = container.nestedContainer(keyedBy: Keys.self, forKey: .a)
                try container.encode(1, forKey: .b)
                try inner.encode(2, forKey: .a)
            }
        }
        XCTAssertThrowsError(try WireJSONEncoder().encode(Interleaved())) { XCTAssertTrue($0 is EncodingError) }
    }

    func testEncoderRefusesToGoOnAfterAValueFailedToEncode() {
        struct Failing: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.unkeyedContainer()
                try container.encode(1)
                throw EncodingError.invalidValue(1, .init(codingPath: [], debugDescription: "no"))
            }
        }
        struct Forgiving: Encodable {
            enum Keys: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try? container.encode(Failing(), forKey: .a)
                try container.encode(2, forKey: .b)
            }
        }
        // Half of the failed value is already written; the document is refused rather than returned with it.
        XCTAssertThrowsError(try WireJSONEncoder().encode(Forgiving())) { XCTAssertTrue($0 is EncodingError) }
    }

    func testEncoderWritesTopLevelScalars() throws {
        try assertSameBytes("a/b")
        try assertSameBytes(42)
        try assertSameBytes(Optional<Int>.none)
        try assertSameBytes(2.5)
    }

    // MARK: - random values, both ways

    typealias Tree = JSONTree

    func testRandomTreesEncodeToFoundationsBytesAndDecodeToFoundationsValues() throws {
        var generator = SeededRandom(seed: 2026)
        for _ in 0..<3000 {
            let tree = Tree.random(depth: 0, using: &generator)
            let expected = try foundationWireEncoder().encode(tree)
            let written = try WireJSONEncoder().encode(tree)
            XCTAssertEqual(String(decoding: written, as: UTF8.self), String(decoding: expected, as: UTF8.self))
            XCTAssertEqual(try WireJSONDecoder().decode(Tree.self, from: written), try JSONDecoder().decode(Tree.self, from: expected))
        }
    }

    /// Every input the decoder accepts, Foundation accepts with the same value; every input Foundation refuses, the
    /// decoder refuses. Inputs are valid documents with one byte changed, removed or inserted.
    func testMutatedDocumentsAreNeverReadDifferentlyFromFoundation() throws {
        var generator = SeededRandom(seed: 8_801_314)
        let interesting = Array(#"{}[]",:"\/u0123456789abcdefEe+-.tfn "#.utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xA9, 0xED, 0xF0, 0xFF]
        var accepted = 0
        for _ in 0..<400 {
            let document = Array(try foundationWireEncoder().encode(Tree.random(depth: 0, using: &generator)))
            for _ in 0..<25 {
                var mutated = document
                let position = Int.random(in: 0...mutated.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0 where position < mutated.count: mutated[position] = interesting.randomElement(using: &generator)!
                case 1 where position < mutated.count: mutated.remove(at: position)
                default: mutated.insert(interesting.randomElement(using: &generator)!, at: position)
                }
                let foundation = try? JSONDecoder().decode(Tree.self, from: Data(mutated))
                let wire = try? WireJSONDecoder().decode(Tree.self, from: mutated)
                if let wire {
                    accepted += 1
                    // Equal but for integers Foundation decides through the nearest Double (JSONTree.matches).
                    XCTAssertTrue(
                        foundation.map(wire.matches) == true, "read differently: \(String(decoding: mutated, as: UTF8.self).debugDescription)")
                } else if foundation != nil {
                    // Accepted by Foundation only: it must be one of the refusals the decoder documents.
                    XCTAssertTrue(Self.isDocumentedRefusal(mutated), "refused: \(String(decoding: mutated, as: UTF8.self).debugDescription)")
                }
            }
        }
        XCTAssertGreaterThan(accepted, 500, "the mutations should leave many documents valid")
    }

    /// What Foundation reads and this decoder refuses, or reads otherwise, as documented: a trailing comma, a member
    /// named twice, and a number with a fraction or an exponent that Foundation takes as an Int after rounding it
    /// through a Double (this decoder takes an integer only when it is one, else a Double if it fits).
    static func isDocumentedRefusal(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
        if text.contains(",]") || text.contains(",}") { return true }
        guard let tree = try? JSONDecoder().decode(Tree.self, from: Data(bytes)) else { return false }
        func hasInt(_ tree: Tree) -> Bool {
            switch tree {
            case .int: return true
            case .array(let items): return items.contains(where: hasInt)
            case .object(let object): return object.values.contains(where: hasInt)
            default: return false
            }
        }
        if hasInt(tree), text.range(of: #"[0-9][.eE]"#, options: .regularExpression) != nil { return true }
        // Foundation keeps the first of two members; re-encoding it loses a member the input had.
        func members(_ tree: Tree) -> Int {
            switch tree {
            case .array(let items): return items.map(members).reduce(0, +)
            case .object(let object): return object.count + object.values.map(members).reduce(0, +)
            default: return 0
            }
        }
        let colons = bytes.filter { $0 == UInt8(ascii: ":") }.count
        return members(tree) < colons
    }

    // MARK: - decoder refusals, one per rule

    func testDecoderRefusesATrailingCommaInAnArray() {
        XCTAssertNoThrow(try WireJSONDecoder().decode([Int].self, from: "[1,2]"))
        assertRefused([Int].self, "[1,2,]")
    }

    func testDecoderRefusesATrailingCommaInAnObject() {
        XCTAssertNoThrow(try WireJSONDecoder().decode([String: Int].self, from: #"{"a":1}"#))
        assertRefused([String: Int].self, #"{"a":1,}"#)
    }

    func testDecoderRefusesAMemberNamedTwice() {
        assertRefused([String: Int].self, #"{"a":1,"a":2}"#)
        assertRefused(ServerResponse.self, #"{"statusCode":1200,"statusCode":1400}"#)
    }

    func testDecoderRefusesAMemberNamedTwiceThroughAnEscape() {
        XCTAssertNoThrow(try WireJSONDecoder().decode([String: Int].self, from: #"{"a":1,"\u0062":2}"#))
        assertRefused([String: Int].self, #"{"a":1,"\u0061":2}"#)
    }

    func testDecoderRefusesAMemberNamedTwiceInALargeObject() {
        let members = (0..<40).map { "\"k\($0)\":\($0)" }
        XCTAssertNoThrow(try WireJSONDecoder().decode([String: Int].self, from: "{" + members.joined(separator: ",") + "}"))
        assertRefused([String: Int].self, "{" + (members + ["\"k7\":0"]).joined(separator: ",") + "}")
    }

    func testDecoderRefusesALoneHighSurrogateEscape() {
        XCTAssertEqual(try WireJSONDecoder().decode([String].self, from: #"["\ud83d\ude00"]"#), ["😀"])
        assertRefused([String].self, #"["\ud83d"]"#)
        assertRefused([String].self, #"["\ud83d\u0041"]"#)
    }

    func testDecoderRefusesALoneLowSurrogateEscape() {
        assertRefused([String].self, #"["\ude00"]"#)
    }

    func testDecoderRefusesInvalidUTF8() {
        XCTAssertEqual(try WireJSONDecoder().decode([String].self, from: [0x5B, 0x22, 0xC3, 0xA9, 0x22, 0x5D]), ["é"])
        for invalid: [UInt8] in [
            [0xFF], [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xC3], [0xE2, 0x82], [0x80],
        ] {
            assertRefused([String].self, [0x5B, 0x22] + invalid + [0x22, 0x5D])
        }
    }

    func testDecoderRefusesARawControlCharacterInAString() {
        assertRefused([String].self, "[\"a\u{1}\"]")
        assertRefused([String].self, "[\"a\nb\"]")
        XCTAssertEqual(try WireJSONDecoder().decode([String].self, from: #"["a\nb\u0001\/"]"#), ["a\nb\u{1}/"])
    }

    func testDecoderRefusesAnInvalidEscape() {
        assertRefused([String].self, #"["\x41"]"#)
        assertRefused([String].self, #"["\u12G4"]"#)
        assertRefused([String].self, #"["\u12"]"#)
    }

    func testDecoderRefusesALeadingZero() {
        XCTAssertEqual(try WireJSONDecoder().decode([Double].self, from: "[0, 0.5, -0]"), [0, 0.5, -0.0])
        assertRefused([Int].self, "[01]")
        assertRefused([Int].self, "[-01]")
    }

    func testDecoderRefusesMalformedNumbers() {
        for text in ["[1.]", "[.5]", "[1e]", "[1e+]", "[-]", "[+1]", "[NaN]", "[Infinity]", "[0x10]"] {
            assertRefused([Double].self, text)
        }
    }

    /// Foundation refuses a number beyond Double's range anywhere in a document; so does the wire reader, even in a
    /// member nobody reads (a message the two read differently). What only underflows, or fits, stays accepted.
    func testDecoderRefusesANumberBeyondDoubleRangeInAnIgnoredMember() throws {
        struct Named: Decodable { var name: String }
        assertRefused(Named.self, #"{"x":1e309,"name":"a"}"#)
        assertRefused(Named.self, #"{"x":[1,-2.5e+3244444],"name":"a"}"#)
        assertRefused(Named.self, #"{"x":"# + String(repeating: "9", count: 400) + #","name":"a"}"#)
        for fits in ["1e308", "1e-400", "123456789012345678901234567890", "-2.5E+3"] {
            XCTAssertEqual(try WireJSONDecoder().decode(Named.self, from: #"{"x":"# + fits + #","name":"a"}"#).name, "a", fits)
            XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data((#"{"x":"# + fits + "}").utf8)), "Foundation reads \(fits)")
        }
        XCTAssertThrowsError(try JSONSerialization.jsonObject(with: Data(#"{"x":1e309}"#.utf8)), "Foundation refuses 1e309")
    }

    func testDecoderRefusesNestingDeeperThanItsLimit() throws {
        let depth = WireJSONDecoder.maximumDepth
        let allowed = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        XCTAssertNoThrow(try WireJSONDecoder().decode(Tree.self, from: allowed))
        assertRefused(Tree.self, "[" + allowed + "]")
        assertRefused(Tree.self, String(repeating: "[", count: 100_000))
    }

    func testDecoderRefusesDataAfterTheValue() {
        assertRefused([Int].self, "[1] [2]")
        assertRefused([Int].self, "[1]x")
        XCTAssertEqual(try WireJSONDecoder().decode([Int].self, from: " \n[1]\t "), [1])
    }

    func testDecoderRefusesWhatIsNotJSON() {
        for text in ["", " ", "[1", "{\"a\"}", "{\"a\" 1}", "{a:1}", "['a']", "[1 2]", "// c\n[1]", "[tru]", "[nul]", "{\"a\":1 \"b\":2}"] {
            assertRefused(Tree.self, text)
        }
    }

    func testDecoderSkipsAByteOrderMarkAsFoundationDoes() throws {
        XCTAssertEqual(try WireJSONDecoder().decode([Int].self, from: [0xEF, 0xBB, 0xBF] + Array("[1]".utf8)), [1])
        XCTAssertEqual(try JSONDecoder().decode([Int].self, from: Data([0xEF, 0xBB, 0xBF] + Array("[1]".utf8))), [1])
    }

    // MARK: - decoder typing

    func testDecoderReadsIntegersWrittenWithAFractionOrExponentAsFoundationDoes() throws {
        for text in ["[1.0]", "[1e2]", "[1E2]", "[-0]", "[0.0000000000000000000000001e25]", "[367857525739371835e0]", "[1.50e1]"] {
            try assertSameValue([Int].self, text)
        }
        XCTAssertEqual(try WireJSONDecoder().decode([Int].self, from: "[-92233720368547758.08e2, 0e99999999999]"), [.min, 0])
        // An integer whose nearest Double is past Int.max: JSONDecoder refuses it as an Int (found by the fuzz target).
        XCTAssertEqual(try WireJSONDecoder().decode([Int].self, from: "[92233720368547758e2]"), [9_223_372_036_854_775_800])
        XCTAssertThrowsError(try JSONDecoder().decode([Int].self, from: Data("[92233720368547758e2]".utf8)))
    }

    func testDecoderRefusesAnIntegerWithANonZeroFraction() {
        assertRefused([Int].self, "[1.5]")
        assertRefused([Int].self, "[15e-1]")
        // JSONDecoder takes these as integers because the Double nearest each is whole: as 0, as 72352646508084 and
        // as -9922337203685477 (its integer digits, found by the fuzz target).
        assertRefused([Int].self, "[-1e-400]")
        assertRefused([Int].self, "[72352646508083.99686]")
        assertRefused([Int].self, "[-9922337203685477.5]")
        XCTAssertEqual(try JSONDecoder().decode([Int].self, from: Data("[72352646508083.99686]".utf8)), [72_352_646_508_084])
        XCTAssertEqual(try JSONDecoder().decode([Int].self, from: Data("[-9922337203685477.5]".utf8)), [-9_922_337_203_685_477])
    }

    func testDecoderRefusesANumberOutsideItsIntegerType() {
        func refusedByBoth<I: Decodable & FixedWidthInteger>(_ type: I.Type, _ text: String, line: UInt = #line) {
            XCTAssertThrowsError(try Self.decodeArray(type, text), text, line: line)
            XCTAssertThrowsError(try Self.foundationDecodeArray(type, text), text, line: line)
        }
        refusedByBoth(Int8.self, "[128]")
        refusedByBoth(UInt8.self, "[256]")
        refusedByBoth(UInt8.self, "[-1]")
        refusedByBoth(Int.self, "[9223372036854775808]")
        refusedByBoth(UInt64.self, "[18446744073709551616]")
        refusedByBoth(Int.self, "[1.5]")
        refusedByBoth(Int.self, "[1e400]")
        XCTAssertEqual(try WireJSONDecoder().decode([Int64].self, from: "[-9223372036854775808, 9223372036854775807]"), [.min, .max])
        XCTAssertEqual(try WireJSONDecoder().decode([UInt64].self, from: "[18446744073709551615]"), [.max])
    }

    static func decodeArray<I: Decodable & FixedWidthInteger>(_ type: I.Type, _ text: String) throws -> [I] {
        try WireJSONDecoder().decode([I].self, from: text)
    }

    static func foundationDecodeArray<I: Decodable & FixedWidthInteger>(_ type: I.Type, _ text: String) throws -> [I] {
        try JSONDecoder().decode([I].self, from: Data(text.utf8))
    }

    func testDecoderRefusesADoubleOutOfRangeAsFoundationDoes() {
        for text in ["[1e400]", "[-1e400]", "[1e-400]"] {
            assertRefused([Double].self, text)
            XCTAssertThrowsError(try JSONDecoder().decode([Double].self, from: Data(text.utf8)), text)
        }
        assertRefused([Float].self, "[1e39]")
    }

    func testDecoderNamesTheMissingMember() {
        XCTAssertThrowsError(try WireJSONDecoder().decode(Version.self, from: #"{"major":1}"#)) { error in
            guard case DecodingError.keyNotFound(let key, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(key.stringValue, "minor")
        }
    }

    func testDecoderNamesTheMemberOfAValueThatFailsAsAWhole() {
        // An unknown raw value and null for an object fail inside their own decoder, which knows no key.
        XCTAssertThrowsError(try WireJSONDecoder().decode(OperationHeader.self, from: #"{"upv":{"major":1,"minor":1},"op":"Register"}"#)) { error in
            guard case DecodingError.dataCorrupted(let context) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(context.codingPath.map(\.stringValue), ["op"])
        }
        XCTAssertThrowsError(try WireJSONDecoder().decode(OperationHeader.self, from: #"{"upv":null,"op":"Reg"}"#)) { error in
            guard case DecodingError.valueNotFound(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(context.codingPath.map(\.stringValue), ["upv"])
        }
    }

    func testDecoderRefusesNullForAValueThatIsNotOptional() {
        XCTAssertThrowsError(try WireJSONDecoder().decode(Version.self, from: #"{"major":1,"minor":null}"#)) { error in
            guard case DecodingError.valueNotFound = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(
            try WireJSONDecoder().decode(OperationHeader.self, from: #"{"upv":{"major":1,"minor":1},"op":"Auth","appID":null}"#).appID, nil)
    }

    func testDecoderRefusesAValueOfTheWrongType() {
        XCTAssertThrowsError(try WireJSONDecoder().decode(Version.self, from: #"{"major":"1","minor":1}"#)) { error in
            guard case DecodingError.typeMismatch = error else { return XCTFail("\(error)") }
        }
        assertRefused(Version.self, "[1,1]")
        assertRefused([String].self, "[1]")
        assertRefused([Bool].self, "[0]")
    }

    func testDecoderReadsFoundationsSpecialTypes() throws {
        XCTAssertEqual(try WireJSONDecoder().decode([Data].self, from: #"["AAEC+v8="]"#), [Data([0, 1, 2, 250, 255])])
        assertRefused([Data].self, #"["AAEC+v8"]"#)
        XCTAssertEqual(try WireJSONDecoder().decode([Date].self, from: "[1.5]"), [Date(timeIntervalSinceReferenceDate: 1.5)])
        XCTAssertEqual(try WireJSONDecoder().decode([URL].self, from: #"["https://a.example/b"]"#), [URL(string: "https://a.example/b")!])
        XCTAssertEqual(try WireJSONDecoder().decode([Decimal].self, from: "[12.50]"), [Decimal(string: "12.5")!])
    }

    func testDecoderListsAnObjectsMembersInOrder() throws {
        // MatchCriteria reads its members through allKeys.
        let criteria = try WireJSONDecoder().decode(MatchCriteria.self, from: #"{"keyIDs":["k"],"aaid":["ABCD#0001"],"unknown":1}"#)
        XCTAssertEqual(criteria, MatchCriteria(aaid: ["ABCD#0001"], keyIDs: ["k"]))
    }
}

extension JSONTree {
    /// A random value, at most about five levels deep, with the strings and numbers that exercise both codecs.
    static func random(depth: Int, using generator: inout some RandomNumberGenerator) -> JSONTree {
        switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2:
            return .int(
                [Int.random(in: -1000...1000, using: &generator), Int.random(in: Int.min...Int.max, using: &generator)].randomElement(
                    using: &generator)!)
        case 3:
            let value = [
                Double.random(in: -1e6...1e6, using: &generator), Double.random(in: -1...1, using: &generator) * 1e-300,
                Double(Int.random(in: -5...5, using: &generator)) + 0.5,
            ].randomElement(using: &generator)!
            return .double(value)
        case 4: return .string(randomString(using: &generator))
        case 5: return .array((0..<Int.random(in: 0...4, using: &generator)).map { _ in random(depth: depth + 1, using: &generator) })
        default:
            var object: [String: JSONTree] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &generator) {
                object[randomString(using: &generator)] = random(depth: depth + 1, using: &generator)
            }
            return .object(object)
        }
    }

    static func randomString(using generator: inout some RandomNumberGenerator) -> String {
        let alphabet: [Character] = ["a", "b", "Z", "0", "/", "\"", "\\", "\n", "\u{1}", "\u{1F}", " ", "é", "😀", "\u{2028}", "\u{7F}", "_"]
        return String((0..<Int.random(in: 0...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
    }
}
