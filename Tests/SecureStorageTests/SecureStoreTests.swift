import Crypto
import Foundation
import XCTest

@testable import SecureStorage

final class SecureStoreTests: XCTestCase {
    func testRoundTripsStringsAndBytesIncludingEmptyAndLarge() async throws {
        let location = try temporaryLocation()
        let store = try await SecureStore.create(at: location, fingerprint: "device-1", protector: testProtector)
        let large = (0..<(2 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try await store.set("héllo wörld ✓", for: "greeting")
        try await store.set("", for: "empty-string")
        try await store.set([UInt8](), for: "empty-bytes")
        try await store.set(large, for: "large")
        try await store.set([0, 1, 2, 255], for: "ключ/with spaces")
        try await store.write()

        let reopened = try await SecureStore.open(at: location, fingerprint: "device-1", protector: testProtector)
        let greeting = try await reopened.string(for: "greeting")
        let emptyString = try await reopened.string(for: "empty-string")
        let emptyBytes = try await reopened.bytes(for: "empty-bytes")
        let largeBack = try await reopened.bytes(for: "large")
        let unicodeKey = try await reopened.bytes(for: "ключ/with spaces")
        let keys = try await reopened.keys()
        XCTAssertEqual(greeting, "héllo wörld ✓")
        XCTAssertEqual(emptyString, "")
        XCTAssertEqual(emptyBytes, [])
        XCTAssertEqual(largeBack, large)
        XCTAssertEqual(unicodeKey, [0, 1, 2, 255])
        XCTAssertEqual(keys, ["empty-bytes", "empty-string", "greeting", "large", "ключ/with spaces"])
        let missing = try await reopened.bytes(for: "absent")
        XCTAssertNil(missing)
    }

    func testVolatileChangesAreNotOnDiskUntilWrite() async throws {
        let location = try temporaryLocation()
        let store = try await SecureStore.create(at: location, fingerprint: "fp", protector: testProtector)
        try await store.set("v1", for: "k")
        let pending = await store.hasUncommittedChanges
        XCTAssertTrue(pending)
        let before = try await SecureStore.open(at: location, fingerprint: "fp", protector: testProtector)
        let absent = try await before.contains("k")
        XCTAssertFalse(absent, "an uncommitted value must not be on disk")
        try await store.write()
        let after = try await SecureStore.open(at: location, fingerprint: "fp", protector: testProtector)
        let present = try await after.string(for: "k")
        XCTAssertEqual(present, "v1")
        // A remove is volatile too.
        try await store.remove("k")
        let stillThere = try await SecureStore.open(at: location, fingerprint: "fp", protector: testProtector).contains("k")
        XCTAssertTrue(stillThere)
    }

    func testVolatileValuesAreKeptEncryptedInMemory() throws {
        let location = try temporaryLocation()
        let engine = try StoreEngine.create(location: location, fingerprint: Array("fp".utf8), protector: testProtector)
        try engine.set(Array("super-secret-value".utf8), for: "k")
        // The engine's in-memory record is the sealed envelope, not the plaintext.
        let mirror = Mirror(reflecting: engine)
        let records = mirror.children.first { $0.label == "records" }?.value as? [[UInt8]: StoreFormat.Record]
        let sealed = try XCTUnwrap(records?.values.first?.sealed)
        XCTAssertNil(sealed.firstRange(of: Array("super-secret".utf8)))
    }

    func testEveryFlippedByteOfASmallStoreIsDetectedAsTampering() throws {
        let location = try temporaryLocation()
        let engine = try StoreEngine.create(location: location, fingerprint: Array("fp".utf8), protector: testProtector)
        try engine.set(Array("alpha".utf8), for: "a")
        try engine.set(Array("beta".utf8), for: "b")
        try engine.write()
        let original = try fileBytes(location)
        XCTAssertGreaterThan(original.count, 100)
        for offset in original.indices {
            var copy = original
            copy[offset] ^= 0x01
            try writeFileBytes(copy, location)
            assertThrows(isTampered) { try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector) }
        }
        // Truncation at every length is detected too, and never crashes.
        for length in stride(from: 0, to: original.count, by: 7) {
            try writeFileBytes(Array(original[0..<length]), location)
            assertThrows({
                if case .tampered = $0 { return true }
                if case .corrupted = $0 { return true }
                return false
            }) {
                try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector)
            }
        }
        try writeFileBytes(original, location)
        XCTAssertNoThrow(try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector))
    }

    func testGarbageFileIsReportedAsCorrupted() throws {
        let location = try temporaryLocation()
        _ = try StoreEngine.create(location: location, fingerprint: [1], protector: testProtector)
        try writeFileBytes(Array(repeating: 0x41, count: 500), location)
        assertThrows({ $0 == .corrupted(reason: "not a secure store file") }) {
            try StoreEngine.open(location: location, fingerprint: [1], protector: testProtector)
        }
    }

    /// Rewrites the file with a recomputed checksum, as an attacker who knows the format can.
    private func rewrite(_ location: StoreLocation, mutate: (inout StoreFormat.ParsedFile) -> Void, macKeys: StoreFormat.Keys? = nil) throws {
        var parsed = try StoreFormat.parse(try fileBytes(location))
        mutate(&parsed)
        let keys = macKeys ?? StoreFormat.Keys(dataKey: SymmetricKey(size: .bits256), storeID: parsed.header.storeID)
        try writeFileBytes(StoreFormat.encode(header: parsed.header, records: parsed.records, keys: keys), location)
    }

    private func twoEntryStore(_ location: StoreLocation) throws -> StoreEngine {
        let engine = try StoreEngine.create(location: location, fingerprint: Array("fp".utf8), protector: testProtector)
        try engine.set(Array("value-of-a".utf8), for: "a")
        try engine.set(Array("value-of-b".utf8), for: "b")
        try engine.write()
        return engine
    }

    func testSwappingTwoEncryptedValuesIsDetected() throws {
        let location = try temporaryLocation()
        _ = try twoEntryStore(location)
        try rewrite(location) { file in
            let tags = Array(file.records.keys)
            let first = file.records[tags[0]]!
            file.records[tags[0]] = file.records[tags[1]]
            file.records[tags[1]] = first
        }
        assertThrows(isTampered) { try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector) }
    }

    func testSwappedValuesAreRejectedByTheEntryBindingEvenWithAForgedStoreMAC() throws {
        // Defence in depth: even someone holding the MAC key cannot move a value to another name.
        let location = try temporaryLocation()
        let engine = try twoEntryStore(location)
        let keys = Mirror(reflecting: engine).children.first { $0.label == "keys" }!.value as! StoreFormat.Keys
        try rewrite(
            location,
            mutate: { file in
                let tags = Array(file.records.keys)
                let first = file.records[tags[0]]!
                file.records[tags[0]] = file.records[tags[1]]
                file.records[tags[1]] = first
            }, macKeys: keys)
        let reopened = try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector)
        assertThrows(isTampered) { try reopened.get("a") }
        assertThrows(isTampered) { try reopened.get("b") }
    }

    func testDeletingAnEntryFromTheFileIsDetected() throws {
        let location = try temporaryLocation()
        _ = try twoEntryStore(location)
        try rewrite(location) { file in file.records.removeValue(forKey: file.records.keys.first!) }
        assertThrows(isTampered) { try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector) }
    }

    func testRestoringAnOlderCopyOfTheFileIsDetectedAsRollback() throws {
        let location = try temporaryLocation()
        let engine = try twoEntryStore(location)
        let old = try fileBytes(location)
        try engine.set(Array("newer".utf8), for: "a")
        try engine.write()
        try writeFileBytes(old, location)
        assertThrows({ $0 == .rolledBack(fileGeneration: 2, expectedAtLeast: 3) }) {
            try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector)
        }
    }

    func testAnAnchorOneGenerationBehindIsRepairedAfterACrashBetweenCommitAndAnchorUpdate() throws {
        let location = try temporaryLocation()
        let engine = try twoEntryStore(location)
        let anchorAtGeneration2 = try Data(contentsOf: URL(fileURLWithPath: location.anchorPath!))
        try engine.set(Array("x".utf8), for: "c")
        try engine.write()
        try anchorAtGeneration2.write(to: URL(fileURLWithPath: location.anchorPath!))
        let reopened = try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector)
        XCTAssertEqual(try reopened.get("c"), Array("x".utf8))
        XCTAssertNotEqual(try Data(contentsOf: URL(fileURLWithPath: location.anchorPath!)), anchorAtGeneration2, "anchor repaired")
    }

    func testHidingTheNewestAnchorSlotToReplayTheOlderFileIsRefused() throws {
        let location = try temporaryLocation()
        let engine = try twoEntryStore(location)  // file generation 2, anchor slots [2, 1]
        let generation2 = try fileBytes(location)
        try engine.set(Array("newer".utf8), for: "a")
        try engine.write()  // file generation 3, anchor slots [2, 3]
        let anchor = URL(fileURLWithPath: location.anchorPath!)
        var bytes = [UInt8](try Data(contentsOf: anchor))
        bytes[RollbackAnchor.slotSize + 20] ^= 0xFF  // damage the slot holding 3 ...
        try Data(bytes).write(to: anchor)
        try writeFileBytes(generation2, location)  // ... and put generation 2 back
        assertThrows(isTampered) { try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector) }
    }

    func testAMissingOrForgedAnchorIsTampering() throws {
        let location = try temporaryLocation()
        _ = try twoEntryStore(location)
        let anchor = URL(fileURLWithPath: location.anchorPath!)
        let original = [UInt8](try Data(contentsOf: anchor))
        var bytes = original
        bytes[20] ^= 0xFF
        bytes[RollbackAnchor.slotSize + 20] ^= 0xFF
        try Data(bytes).write(to: anchor)
        assertThrows(isTampered) { try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector) }
        try Data(original.dropLast()).write(to: anchor)
        assertThrows(isTampered) { try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector) }
        try FileManager.default.removeItem(at: anchor)
        assertThrows(isTampered) { try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector) }
    }

    func testATornAnchorSlotAfterACommitIsRepaired() throws {
        // A crash while the anchor's older slot is being overwritten: the file is at generation 3, the torn
        // slot is unreadable and the other slot still says 2.
        let location = try temporaryLocation()
        let engine = try twoEntryStore(location)  // slots: [2, 1]
        try engine.set(Array("x".utf8), for: "c")
        try engine.write()  // slots: [2, 3]
        let anchor = URL(fileURLWithPath: location.anchorPath!)
        var bytes = [UInt8](try Data(contentsOf: anchor))
        bytes[RollbackAnchor.slotSize + 30] ^= 0xFF  // tear the slot holding 3
        try Data(bytes).write(to: anchor)
        let reopened = try StoreEngine.open(location: location, fingerprint: Array("fp".utf8), protector: testProtector)
        XCTAssertEqual(try reopened.get("c"), Array("x".utf8))
        let repaired = try RollbackAnchor(path: location.anchorPath!).read(
            storeID: Array(try StoreFormat.parse(fileBytes(location)).header.storeID),
            key: Mirror(reflecting: reopened).children.first { $0.label == "keys" }.map { ($0.value as! StoreFormat.Keys).mac }!)
        XCTAssertEqual(repaired, RollbackAnchor.State(generation: 3, damaged: false, nextSlot: 0))
    }

    func testWithoutAnAnchorRollbackDetectionIsReportedOff() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try await SecureStore.create(
            at: StoreLocation(directory: dir, name: "s", anchor: RollbackAnchorLocation.none),
            fingerprint: "fp", protector: testProtector)
        let report = await store.protectionReport
        XCTAssertFalse(report.detectsRollback)
        XCTAssertFalse(report.isHardwareBacked)
        XCTAssertTrue(report.isDeviceBound)
        XCTAssertEqual(report.kdf, "scrypt N=1024 r=8 p=1")
    }

    func testWrongFingerprintFailsWithItsTypedErrorAndRebindKeepsTheData() async throws {
        let location = try temporaryLocation()
        let store = try await SecureStore.create(at: location, fingerprint: "old-device", protector: testProtector)
        try await store.set("kept", for: "k")
        try await store.write()
        do {
            _ = try await SecureStore.open(at: location, fingerprint: "other-device", protector: testProtector)
            XCTFail("a wrong fingerprint must not open the store")
        } catch let error as SecureStorageError {
            XCTAssertEqual(error, .fingerprintMismatch)
        }
        try await store.rebind(to: "new-device")
        let reopened = try await SecureStore.open(at: location, fingerprint: "new-device", protector: testProtector)
        let value = try await reopened.string(for: "k")
        XCTAssertEqual(value, "kept")
        do {
            _ = try await SecureStore.open(at: location, fingerprint: "old-device", protector: testProtector)
            XCTFail("the old fingerprint must no longer open the store")
        } catch let error as SecureStorageError {
            XCTAssertEqual(error, .fingerprintMismatch)
        }
    }

    func testPassphraseIsPartOfTheBinding() throws {
        let location = try temporaryLocation()
        let withPass = try SoftwareKeyProtector(iterationCount: 1024, passphrase: "correct horse")
        _ = try StoreEngine.create(location: location, fingerprint: [7], protector: withPass)
        let wrongPass = try SoftwareKeyProtector(iterationCount: 1024, passphrase: "wrong")
        assertThrows({ $0 == .fingerprintMismatch }) { try StoreEngine.open(location: location, fingerprint: [7], protector: wrongPass) }
        assertThrows({ $0 == .fingerprintMismatch }) { try StoreEngine.open(location: location, fingerprint: [7], protector: testProtector) }
        XCTAssertNoThrow(try StoreEngine.open(location: location, fingerprint: [7], protector: withPass))
    }

    func testIterationCountBelowTheMinimumIsRejectedAndOthersRoundUp() throws {
        XCTAssertThrowsError(try SoftwareKeyProtector(iterationCount: 1000))
        XCTAssertEqual(try SoftwareKeyProtector(iterationCount: 1500).costFactor, 2048)
        XCTAssertEqual(try SoftwareKeyProtector(iterationCount: 4096).costFactor, 4096)
    }

    func testInvalidKeyNamesAndOversizedValuesAreRejectedWithoutChangingTheStore() throws {
        let location = try temporaryLocation()
        let engine = try StoreEngine.create(location: location, fingerprint: [1], protector: testProtector)
        assertThrows({ $0 == .invalidKeyName("") }) { try engine.set([1], for: "") }
        assertThrows({
            if case .invalidKeyName = $0 { return true }
            return false
        }) { try engine.set([1], for: String(repeating: "x", count: 1025)) }
        assertThrows({
            if case .invalidKeyName = $0 { return true }
            return false
        }) { try engine.set([1], for: "a\0b") }
        let tooLarge = [UInt8](repeating: 0, count: SecureStoreLimits.maximumValueBytes + 1)
        assertThrows({ $0 == .valueTooLarge(size: tooLarge.count, limit: SecureStoreLimits.maximumValueBytes) }) {
            try engine.set(tooLarge, for: "big")
        }
        XCTAssertEqual(try engine.count(), 0)
        XCTAssertFalse(engine.hasUncommittedChanges)
    }

    func testMissingAndDuplicateStoresHaveTypedErrors() async throws {
        let location = try temporaryLocation()
        assertThrows({
            if case .storageNotFound = $0 { return true }
            return false
        }) {
            try StoreEngine.open(location: location, fingerprint: [1], protector: testProtector)
        }
        _ = try StoreEngine.create(location: location, fingerprint: [1], protector: testProtector)
        assertThrows({
            if case .storageAlreadyExists = $0 { return true }
            return false
        }) {
            try StoreEngine.create(location: location, fingerprint: [1], protector: testProtector)
        }
        assertThrows({
            if case .invalidParameter = $0 { return true }
            return false
        }) {
            try StoreEngine.create(
                location: StoreLocation(directory: location.directory, name: "../escape"), fingerprint: [1], protector: testProtector)
        }
    }

    func testFileIsPrivateAndKeyNamesAreNotReadable() throws {
        let location = try temporaryLocation()
        let engine = try StoreEngine.create(location: location, fingerprint: [1], protector: testProtector)
        try engine.set(Array("v".utf8), for: "account.alice@example.com.pin")
        try engine.write()
        let attributes = try FileManager.default.attributesOfItem(atPath: location.filePath)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let bytes = try fileBytes(location)
        XCTAssertNil(bytes.firstRange(of: Array("alice".utf8)))
    }

    func testAWriteThatFailsKeepsThePendingChanges() throws {
        let location = try temporaryLocation()
        let engine = try StoreEngine.create(location: location, fingerprint: [1], protector: testProtector)
        try engine.set([1], for: "k")
        try FileManager.default.removeItem(atPath: location.filePath)
        assertThrows({
            if case .storageNotFound = $0 { return true }
            return false
        }) { try engine.write() }
        XCTAssertTrue(engine.hasUncommittedChanges)
        XCTAssertEqual(try engine.get("k"), [1])
    }

    func testTwoInstancesInOneProcessMergeTheirCommits() throws {
        let location = try temporaryLocation()
        let first = try StoreEngine.create(location: location, fingerprint: [1], protector: testProtector)
        try first.set([0], for: "shared")
        try first.write()
        let second = try StoreEngine.open(location: location, fingerprint: [1], protector: testProtector)
        try first.set([1], for: "from-first")
        try first.write()
        try second.set([2], for: "from-second")
        try second.remove("shared")
        try second.write()
        let reopened = try StoreEngine.open(location: location, fingerprint: [1], protector: testProtector)
        XCTAssertEqual(try reopened.keyNames(), ["from-first", "from-second"])
    }

    func testCodableHelpersTransactionAndDelete() async throws {
        struct Record: Codable, Equatable {
            var name: String
            var attempts: Int
        }
        let location = try temporaryLocation()
        let store = try await SecureStore.openOrCreate(at: location, fingerprint: "fp", protector: testProtector)
        try await store.transaction { store in
            try store.set(encoding: Record(name: "pin", attempts: 2), for: "record")
        }
        let reopened = try await SecureStore.openOrCreate(at: location, fingerprint: "fp", protector: testProtector)
        let record = try await reopened.value(Record.self, for: "record")
        XCTAssertEqual(record, Record(name: "pin", attempts: 2))
        try await reopened.set([0xFF, 0xFE], for: "binary")
        do {
            _ = try await reopened.string(for: "binary")
            XCTFail()
        } catch let e as SecureStorageError { XCTAssertEqual(e, .typeMismatch(key: "binary")) }
        try await reopened.delete()
        XCTAssertFalse(SecureStore.exists(at: location))
        do {
            _ = try await reopened.count()
            XCTFail()
        } catch let e as SecureStorageError { XCTAssertEqual(e, .storeClosed) }
    }

    func testFacadeInTheShapeOfTheCommercialSDK() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let storage = try SecureStorageSDK(storageName: "app", fingerprint: "fp", iterationCount: 1024, directory: dir)
        try storage.putString(forKey: "s", value: "text")
        try storage.putBytes(forKey: "b", value: [1, 2, 3])
        XCTAssertEqual(try storage.size(), 2)
        XCTAssertTrue(try storage.contains(key: "s"))
        try storage.write()
        let again = try SecureStorageSDK(storageName: "app", fingerprint: "fp", iterationCount: 1024, directory: dir)
        XCTAssertEqual(try again.getString(forKey: "s"), "text")
        XCTAssertEqual(try again.getAll(), ["s": Array("text".utf8), "b": [1, 2, 3]])
        XCTAssertFalse(again.isProtectedBySecureHardware)
        try again.remove(forKey: "s")
        try again.clear()
        XCTAssertEqual(try again.size(), 0)
        try again.rebind(newFingerprint: "fp2")
        XCTAssertThrowsError(try SecureStorageSDK(storageName: "app", fingerprint: "fp", iterationCount: 1024, directory: dir))
        let rebound = try SecureStorageSDK(storageName: "app", fingerprint: "fp2", iterationCount: 1024, directory: dir)
        XCTAssertEqual(try rebound.size(), 0, "clear() was written together with the rebind")
        try rebound.delete()
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("app.mauthstore").path))
    }
}

/// `SecureStore.setAside(at:)`: a store this device cannot unlock makes room for a new one, and one copy is kept.
final class SetAsideTests: XCTestCase {
    func testAStoreSetAsideLeavesRoomForANewOneAndKeepsItsBytes() async throws {
        let location = try temporaryLocation()
        let old = try await SecureStore.create(at: location, fingerprint: "other-device", protector: testProtector)
        try await old.set("theirs", for: "k")
        try await old.write()
        let bytes = try fileBytes(location)
        try SecureStore.setAside(at: location)
        XCTAssertFalse(SecureStore.exists(at: location))
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: location.setAsidePath))), bytes)
        let fresh = try await SecureStore.openOrCreate(at: location, fingerprint: "this-device", protector: testProtector)
        let value = try await fresh.string(for: "k")
        XCTAssertNil(value)
    }

    func testSettingAsideNothingIsNoError() throws {
        let location = try temporaryLocation()
        XCTAssertNoThrow(try SecureStore.setAside(at: location))
        XCTAssertFalse(FileManager.default.fileExists(atPath: location.setAsidePath))
    }

    func testASecondSetAsideReplacesTheFirstCopy() async throws {
        let location = try temporaryLocation()
        _ = try await SecureStore.create(at: location, fingerprint: "first", protector: testProtector)
        try SecureStore.setAside(at: location)
        _ = try await SecureStore.create(at: location, fingerprint: "second", protector: testProtector)
        let second = try fileBytes(location)
        try SecureStore.setAside(at: location)
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: location.setAsidePath))), second)
        let copies = try FileManager.default.contentsOfDirectory(atPath: location.directory.path).filter { $0.hasSuffix(".mauthstore.unreadable") }
        XCTAssertEqual(copies, ["store.mauthstore.unreadable"])
    }
}
