#include <kjudge/compile/shared_library_check.hpp>

#include <elf.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include <kjudge/runner/process_detail.hpp>

namespace kj::compile {

namespace fs = std::filesystem;

namespace {

/** Reads `bytes` at `offset` into `out`; false when the file ends first. */
bool read_at(std::ifstream& in, std::uint64_t offset, void* out, std::size_t bytes) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
  return static_cast<std::size_t>(in.gcount()) == bytes;
}

/** Whether [offset, offset + count * entry) lies within `size` (no overflow). */
bool table_fits(std::uint64_t offset, std::uint64_t count, std::uint64_t entry,
                std::uint64_t size) {
  if (count == 0) return true;
  if (entry != 0 && count > (UINT64_MAX - offset) / entry) return false;
  return offset + count * entry <= size;
}

/** Reads each of the file's program headers in turn and gives it to `look`, which returns why
 *  the file is not what it should be (empty: go on); the first such reason, or why the headers
 *  cannot be read, else empty. */
template <class Look>
std::string each_segment(std::ifstream& in, const Elf64_Ehdr& header, Look&& look) {
  for (std::uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    if (!read_at(in, header.e_phoff + std::uint64_t{i} * header.e_phentsize, &segment,
                 sizeof segment))
      return "cannot read its program headers";
    if (std::string why = look(segment); !why.empty()) return why;
  }
  return {};
}

/** The folders directly under `dir` (torch's build folders), none when `dir` is a symlink or no
 *  folder (kjudge makes it a folder; one the candidate replaced could point anywhere); symlinks
 *  among them are left out. */
std::vector<fs::path> build_folders(const fs::path& dir) {
  std::vector<fs::path> folders;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return folders;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->symlink_status(type_ec).type() == fs::file_type::directory)
      folders.push_back(it->path());
  }
  return folders;
}

/** `lock` opened and flock-held by this process while it lives (torch's FileLock takes flock on
 *  it): `taken` false when there is none, it cannot be opened, or another process holds it. */
struct build_lock {
  runner::detail::unique_fd fd;
  bool taken = false;
  explicit build_lock(const fs::path& lock)
      : fd(::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)),
        taken(fd.open() && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {}
  [[nodiscard]] bool held_elsewhere() const { return fd.open() && !taken; }
};

}  // namespace

std::string elf_damage(const fs::path& path) {
  std::error_code ec;
  const std::uint64_t size = fs::file_size(path, ec);
  if (ec) return fmt::format("cannot read its size: {}", ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return fmt::format("cannot open it: {}", std::strerror(errno));
  Elf64_Ehdr header{};
  if (size < sizeof header || !read_at(in, 0, &header, sizeof header))
    return fmt::format("{} bytes, shorter than an ELF header", size);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return "not an ELF file";
  if (header.e_ident[EI_CLASS] != ELFCLASS64) return "not a 64-bit ELF file";
  if (!table_fits(header.e_phoff, header.e_phnum, header.e_phentsize, size))
    return fmt::format("its program headers end past its {} bytes", size);
  if (header.e_shoff != 0 && !table_fits(header.e_shoff, header.e_shnum, header.e_shentsize, size))
    return fmt::format("its section headers end past its {} bytes", size);
  if (header.e_phnum == PN_XNUM) return {};  // the count lives elsewhere: not checked further
  if (header.e_phentsize < sizeof(Elf64_Phdr) && header.e_phnum > 0)
    return "its program headers are too small";
  return each_segment(in, header, [size](const Elf64_Phdr& segment) {
    if (segment.p_type == PT_LOAD && segment.p_filesz > 0 &&
        !table_fits(segment.p_offset, 1, segment.p_filesz, size))
      return fmt::format("a loadable segment ends at byte {}, past its {} bytes",
                         segment.p_offset + segment.p_filesz, size);
    return std::string();
  });
}

std::string shared_library_problem(const fs::path& path) {
  if (std::string damage = elf_damage(path); !damage.empty()) return damage;
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr header{};
  if (!in || !read_at(in, 0, &header, sizeof header)) return "cannot read its ELF header";
  if (header.e_type != ET_DYN)
    return fmt::format("an ELF file of type {} ({}), not a shared object", header.e_type,
                       header.e_type == ET_REL    ? "relocatable, an object"
                       : header.e_type == ET_EXEC ? "an executable"
                                                  : "other");
  // A position-independent executable is ET_DYN too; it names an interpreter, which glibc's
  // dlopen refuses.
  const auto names_an_interpreter = [](const Elf64_Phdr& segment) {
    return segment.p_type == PT_INTERP ? std::string(
                                             "a position-independent executable (it "
                                             "names a program interpreter), not a "
                                             "shared object")
                                       : std::string();
  };
  if (header.e_phnum != PN_XNUM)
    if (std::string why = each_segment(in, header, names_an_interpreter); !why.empty()) return why;
#if defined(__x86_64__)
  constexpr std::uint16_t machine = EM_X86_64;
#elif defined(__aarch64__)
  constexpr std::uint16_t machine = EM_AARCH64;
#else
  constexpr std::uint16_t machine = 0;
#endif
  if (machine != 0 && header.e_machine != machine)
    return fmt::format("an ELF file for machine {}, not this one's ({})", header.e_machine,
                       machine);
  return {};
}

std::vector<removed_library> remove_damaged_libraries(const fs::path& dir,
                                                      std::chrono::seconds quiet) {
  std::vector<removed_library> removed;
  for (const auto& folder : build_folders(dir)) {
    const fs::path library = folder / (folder.filename().string() + ".so");
    std::error_code ec;
    if (fs::symlink_status(library, ec).type() != fs::file_type::regular) continue;
    // A build underway under torch's FileLock holds `lock`; held here in turn while the library
    // is looked at, no build starts writing it meanwhile.
    const build_lock lock(folder / "lock");
    if (lock.held_elsewhere()) continue;
    const auto modified = fs::last_write_time(library, ec);
    if (ec || fs::file_time_type::clock::now() - modified < quiet) continue;
    std::string why = elf_damage(library);
    if (why.empty() || why.rfind("cannot ", 0) == 0) continue;
    if (fs::remove(library, ec)) removed.push_back({library, std::move(why)});
  }
  return removed;
}

std::vector<fs::path> remove_abandoned_build_locks(const fs::path& dir, fs::file_time_type since) {
  std::vector<fs::path> removed;
  for (const auto& folder : build_folders(dir)) {
    const fs::path path = folder / "lock";
    std::error_code ec;
    if (fs::symlink_status(path, ec).type() != fs::file_type::regular) continue;
    const auto made = fs::last_write_time(path, ec);
    if (ec || made < since) continue;
    const build_lock lock(path);  // held while the file goes, as above
    if (!lock.taken) continue;    // held elsewhere: in use (or it cannot be opened)
    if (fs::remove(path, ec)) removed.push_back(path);
  }
  return removed;
}

}  // namespace kj::compile
