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
  for (std::uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    if (!read_at(in, header.e_phoff + std::uint64_t{i} * header.e_phentsize, &segment,
                 sizeof segment))
      return "cannot read its program headers";
    if (segment.p_type == PT_LOAD && segment.p_filesz > 0 &&
        !table_fits(segment.p_offset, 1, segment.p_filesz, size))
      return fmt::format("a loadable segment ends at byte {}, past its {} bytes",
                         segment.p_offset + segment.p_filesz, size);
  }
  return {};
}

std::vector<removed_library> remove_damaged_libraries(const fs::path& dir,
                                                      std::chrono::seconds quiet) {
  std::vector<removed_library> removed;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return removed;
  std::vector<fs::path> folders;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->symlink_status(type_ec).type() == fs::file_type::directory)
      folders.push_back(it->path());
  }
  for (const auto& folder : folders) {
    const fs::path library = folder / (folder.filename().string() + ".so");
    std::error_code file_ec;
    if (fs::symlink_status(library, file_ec).type() != fs::file_type::regular) continue;
    // A build underway under torch's FileLock holds flock on `lock`; this holds it in turn while
    // the library is looked at, so that no build starts writing it meanwhile.
    const runner::detail::unique_fd lock(
        ::open((folder / "lock").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (lock.open() && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;
    const auto modified = fs::last_write_time(library, file_ec);
    if (file_ec || fs::file_time_type::clock::now() - modified < quiet) continue;
    std::string why = elf_damage(library);
    if (why.empty() || why.rfind("cannot ", 0) == 0) continue;
    if (fs::remove(library, file_ec)) removed.push_back({library, std::move(why)});
  }
  return removed;
}

std::vector<fs::path> remove_abandoned_build_locks(const fs::path& dir, fs::file_time_type since) {
  std::vector<fs::path> removed;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return removed;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    if (it->symlink_status(file_ec).type() != fs::file_type::directory) continue;
    const fs::path lock_path = it->path() / "lock";
    if (fs::symlink_status(lock_path, file_ec).type() != fs::file_type::regular) continue;
    const auto made = fs::last_write_time(lock_path, file_ec);
    if (file_ec || made < since) continue;
    const runner::detail::unique_fd lock(
        ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!lock.open() || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;  // held: in use
    if (fs::remove(lock_path, file_ec)) removed.push_back(lock_path);
  }
  return removed;
}

}  // namespace kj::compile
