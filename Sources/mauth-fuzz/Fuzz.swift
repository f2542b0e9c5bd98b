import Foundation
import FuzzTargets

// Two builds of one program (see `Fuzz/run`):
// - built with `--sanitize fuzzer --sanitize address -Xswiftc -DMAUTH_LIBFUZZER`, libFuzzer owns `main` and calls
//   `LLVMFuzzerTestOneInput` for the target named by MAUTH_FUZZ_TARGET (an environment variable, because libFuzzer's
//   -fork and -jobs modes start children with the same command line, which has no room for it);
// - built normally, it replays saved inputs (`replay`) and writes the seed corpus (`seeds`).

#if MAUTH_LIBFUZZER

private let selectedTarget: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["MAUTH_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(
            Data("MAUTH_FUZZ_TARGET must be one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(
    _ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?
) -> Int32 {
    _ = selectedTarget
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try selectedTarget.run(input)
    } catch {
        // A broken invariant is a crash, so that libFuzzer saves the input as crash-<sha1>.
        fatalError("fuzz finding: \(error)")
    }
    return 0
}

#else

@main
struct MauthFuzz {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        let command = arguments.isEmpty ? "help" : arguments.removeFirst()
        switch command {
        case "replay":
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else { usage() }
            exit(replay(target, paths: Array(arguments.dropFirst())))
        case "seeds":
            guard arguments.count == 1 else { usage() }
            writeSeeds(to: URL(fileURLWithPath: arguments[0]))
        case "list":
            for target in FuzzTarget.allCases { print(target.rawValue) }
        default:
            usage()
        }
    }

    static func usage() -> Never {
        print(
            """
            usage: mauth-fuzz replay TARGET PATH...   run saved inputs (files, or folders of them) through a target
                   mauth-fuzz seeds FOLDER            write the seed corpus, one subfolder per target
                   mauth-fuzz list                    name the targets
            targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))
            Fuzzing itself needs the libFuzzer build: see Fuzz/run.
            """)
        exit(64)
    }

    static func replay(_ target: FuzzTarget, paths: [String]) -> Int32 {
        var count = 0
        var accepted = 0
        var findings = 0
        for path in paths {
            for file in inputFiles(at: URL(fileURLWithPath: path)) {
                guard let data = FileManager.default.contents(atPath: file.path) else {
                    print("\(file.path): unreadable")
                    findings += 1
                    continue
                }
                count += 1
                do { if try target.run(Array(data)) { accepted += 1 } } catch {
                    findings += 1
                    print("\(file.path): \(error)")
                }
            }
        }
        print("\(target.rawValue): \(count) inputs, \(accepted) accepted, \(findings) findings")
        return findings == 0 ? 0 : 1
    }

    static func inputFiles(at url: URL) -> [URL] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [url] }
        let entries = (try? FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)) ?? []
        return entries.sorted { $0.path < $1.path }.flatMap(inputFiles(at:))
    }

    static func writeSeeds(to folder: URL) {
        do {
            for (target, seeds) in try FuzzSeeds.make() {
                let directory = folder.appendingPathComponent(target.rawValue)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                for (name, bytes) in seeds { try Data(bytes).write(to: directory.appendingPathComponent(name)) }
                print("\(target.rawValue): \(seeds.count) seeds")
            }
        } catch {
            print("cannot write the seeds: \(error)")
            exit(1)
        }
    }
}

#endif
