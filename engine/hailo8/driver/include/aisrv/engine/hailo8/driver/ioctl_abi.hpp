// aisrv hailo8/driver — our own definitions of the hailo_pci ioctl ABI (kernel header
// common/hailo_ioctl_common.h of hailo-ai/hailort-drivers, facts §2). Every struct is packed (the driver uses
// #pragma pack(1)); enums are 4 bytes, bool 1 byte, size_t / uintptr_t 8 bytes (LP64: x86-64, aarch64).
// Two layouts exist for the driver versions we support:
//   abi::current  — drivers 4.21.0 … 4.23.0 (facts §2.3/2.4, the 4.23 tables)
//   abi::v4_18    — drivers 4.18.0 … 4.20.1: INTERRUPTS_WAIT, LAUNCH_TRANSFER and DESC_LIST_PROGRAM had other
//                   layouts (facts §2.3 "ABI history"; offsets read from the v4.18.0–v4.20.1 headers), and the
//                   general ioctl MEMORY_TRANSFER existed (it is gone in 4.23)
// Every size, offset and ioctl number is checked at compile time below; the values come from the facts file
// (4.23) and from compiling the real headers of each tag (4.18.0, 4.19.0, 4.20.0, 4.20.1, 4.21.0, 4.22.0, 4.23.0).
#pragma once

#include <cstddef>
#include <cstdint>

namespace aisrv::engine::hailo8::driver {

#if !(defined(__x86_64__) || defined(__aarch64__))
#error "the hailo_pci ABI definitions assume an LP64 target with the generic Linux ioctl encoding (x86-64, aarch64)"
#endif

// Linux _IOC encoding (asm-generic/ioctl.h): dir << 30 | size << 16 | type << 8 | nr; dir 1 = write, 2 = read.
namespace ioc {
inline constexpr uint32_t kNone = 0, kWrite = 1, kRead = 2;
constexpr uint32_t make(uint32_t dir, char type, uint32_t nr, uint32_t size) {
  return (dir << 30) | (size << 16) | (static_cast<uint32_t>(static_cast<unsigned char>(type)) << 8) | nr;
}
constexpr uint32_t io(char type, uint32_t nr) { return make(kNone, type, nr, 0); }
constexpr uint32_t iow(char type, uint32_t nr, uint32_t size) { return make(kWrite, type, nr, size); }
constexpr uint32_t ior(char type, uint32_t nr, uint32_t size) { return make(kRead, type, nr, size); }
constexpr uint32_t iowr(char type, uint32_t nr, uint32_t size) { return make(kRead | kWrite, type, nr, size); }
constexpr uint32_t size_of(uint32_t request) { return (request >> 16) & 0x3FFF; }
}  // namespace ioc

inline constexpr char kGeneralMagic = 'g';
inline constexpr char kVdmaMagic = 'v';
inline constexpr char kNncMagic = 'n';

inline constexpr size_t kMaxVdmaEngines = 3;
inline constexpr size_t kMaxVdmaChannelsPerEngine = 32;
inline constexpr size_t kMaxControlLength = 1500;       // MAX_CONTROL_LENGTH
inline constexpr size_t kMd5Length = 16;                // PCIE_EXPECTED_MD5_LENGTH
inline constexpr size_t kMaxNotificationLength = 1500;  // MAX_NOTIFICATION_LENGTH
inline constexpr size_t kMaxFwLogLength = 512;          // MAX_FW_LOG_BUFFER_LENGTH
inline constexpr size_t kChannelIrqTimestamps = 256;    // HAILO_VDMA_MAX_ONGOING_TRANSFERS * 2
inline constexpr size_t kMaxMemoryTransferLength = 4096;

// enum values (4 bytes each in the structs)
enum class BoardType : uint32_t { hailo8 = 0 };  // other values are Hailo-15/10 SoC boards
enum class AllocationMode : uint32_t { userspace = 0, driver = 1 };
enum class DmaType : uint32_t { pcie = 0, dram = 1, pci_ep = 2 };
enum class CpuId : uint32_t { cpu0_app = 0, cpu1_core = 1, none = 2 };
enum class DmaDirection : uint32_t { bidirectional = 0, to_device = 1, from_device = 2, none = 3 };
enum class DmaBufferType : uint32_t { user_ptr = 0, dmabuf = 1 };
enum class InterruptsDomain : uint32_t { none = 0, device = 1, host = 2 };
enum class SyncType : uint32_t { for_cpu = 0, for_device = 1 };

#pragma pack(push, 1)

// ---- structs identical in every supported version ---------------------------------------------------------------

struct DeviceProperties {  // HAILO_QUERY_DEVICE_PROPERTIES
  uint16_t desc_max_page_size;
  uint32_t board_type;       // BoardType
  uint32_t allocation_mode;  // AllocationMode
  uint32_t dma_type;         // DmaType
  uint64_t dma_engines_count;
  uint8_t is_fw_loaded;
};

struct DriverInfo {  // HAILO_QUERY_DRIVER_INFO
  uint32_t major_version;
  uint32_t minor_version;
  uint32_t revision_version;
};

struct VdmaEnableChannelsParams {
  uint32_t channels_bitmap_per_engine[kMaxVdmaEngines];
  uint8_t enable_timestamps_measure;
};

struct VdmaDisableChannelsParams {
  uint32_t channels_bitmap_per_engine[kMaxVdmaEngines];
};

struct ChannelInterruptTimestamp {
  uint64_t timestamp_ns;
  uint16_t desc_num_processed;
};

struct VdmaInterruptsReadTimestampParams {
  uint8_t engine_index;
  uint8_t channel_index;
  uint32_t timestamps_count;
  ChannelInterruptTimestamp timestamps[kChannelIrqTimestamps];
};

struct VdmaBufferMapParams {
  uint64_t user_address;
  uint64_t size;
  uint32_t data_direction;  // DmaDirection
  uint32_t buffer_type;     // DmaBufferType
  uint64_t allocated_buffer_handle;
  uint64_t mapped_handle;  // out
};

struct VdmaBufferUnmapParams {
  uint64_t mapped_handle;
};

struct VdmaBufferSyncParams {
  uint64_t handle;
  uint32_t sync_type;  // SyncType
  uint64_t offset;
  uint64_t count;
};

struct DescListCreateParams {
  uint64_t desc_count;
  uint16_t desc_page_size;
  uint8_t is_circular;
  uint64_t desc_handle;  // out
  uint64_t dma_address;  // out
};

struct DescListReleaseParams {
  uint64_t desc_handle;
};

struct AllocateLowMemoryBufferParams {
  uint64_t buffer_size;
  uint64_t buffer_handle;  // out
};

struct FreeLowMemoryBufferParams {
  uint64_t buffer_handle;
};

struct MarkAsInUseParams {
  uint8_t in_use;  // out
};

struct AllocateContinuousBufferParams {
  uint64_t buffer_size;
  uint64_t buffer_handle;  // out
  uint64_t dma_address;    // out
};

struct FreeContinuousBufferParams {
  uint64_t buffer_handle;
};

struct FwControl {  // HAILO_FW_CONTROL
  uint8_t expected_md5[kMd5Length];
  uint32_t buffer_len;
  uint8_t buffer[kMaxControlLength];
  uint32_t timeout_ms;
  uint32_t cpu_id;  // CpuId
};

struct D2hNotification {  // HAILO_READ_NOTIFICATION
  uint64_t buffer_len;
  uint8_t buffer[kMaxNotificationLength];
};

struct ReadLogParams {  // HAILO_READ_LOG
  uint32_t cpu_id;  // CpuId
  uint8_t buffer[kMaxFwLogLength];
  uint64_t buffer_size;
  uint64_t read_bytes;  // out
};

// ---- structs that differ between the two layouts ---------------------------------------------------------------

namespace abi {

namespace current {  // drivers 4.21.0 … 4.23.0

struct DescListProgramParams {
  uint64_t buffer_handle;
  uint64_t buffer_size;
  uint64_t buffer_offset;
  uint32_t batch_size;
  uint64_t desc_handle;
  uint8_t channel_index;
  uint32_t starting_desc;
  uint8_t should_bind;
  uint32_t last_interrupts_domain;  // InterruptsDomain
  uint8_t is_debug;
  uint32_t stride;
};

struct VdmaInterruptsChannelData {
  uint8_t engine_index;
  uint8_t channel_index;
  uint8_t data;  // transfers completed, or 0xFF (channel not active) / 0xFE (channel error)
};

struct VdmaInterruptsWaitParams {
  uint32_t channels_bitmap_per_engine[kMaxVdmaEngines];
  uint8_t channels_count;  // out
  VdmaInterruptsChannelData irq_data[kMaxVdmaChannelsPerEngine * kMaxVdmaEngines];  // out
};

struct VdmaTransferBuffer {
  uint32_t buffer_type;  // DmaBufferType
  uint64_t addr_or_fd;
  uint32_t size;
};

inline constexpr size_t kMaxBuffersPerTransfer = 8;

struct VdmaLaunchTransferParams {
  uint8_t engine_index;
  uint8_t channel_index;
  uint64_t desc_handle;
  uint32_t starting_desc;
  uint8_t should_bind;
  uint8_t buffers_count;
  VdmaTransferBuffer buffers[kMaxBuffersPerTransfer];
  uint32_t first_interrupts_domain;
  uint32_t last_interrupts_domain;
  uint8_t is_debug;
};

}  // namespace current

namespace v4_18 {  // drivers 4.18.0 … 4.20.1

struct DescListProgramParams {
  uint64_t buffer_handle;
  uint64_t buffer_size;
  uint64_t buffer_offset;
  uint64_t desc_handle;
  uint8_t channel_index;
  uint32_t starting_desc;
  uint8_t should_bind;
  uint32_t last_interrupts_domain;
  uint8_t is_debug;
};

struct VdmaInterruptsChannelData {
  uint8_t engine_index;
  uint8_t channel_index;
  uint8_t is_active;
  uint8_t transfers_completed;
  uint8_t host_error;
  uint8_t device_error;
  uint8_t validation_success;
};

struct VdmaInterruptsWaitParams {
  uint32_t channels_bitmap_per_engine[kMaxVdmaEngines];
  uint8_t channels_count;
  VdmaInterruptsChannelData irq_data[kMaxVdmaChannelsPerEngine * kMaxVdmaEngines];
};

struct VdmaTransferBuffer {
  uint64_t mapped_buffer_handle;
  uint32_t offset;
  uint32_t size;
};

inline constexpr size_t kMaxBuffersPerTransfer = 2;

struct VdmaLaunchTransferParams {
  uint8_t engine_index;
  uint8_t channel_index;
  uint64_t desc_handle;
  uint32_t starting_desc;
  uint8_t should_bind;
  uint8_t buffers_count;
  VdmaTransferBuffer buffers[kMaxBuffersPerTransfer];
  uint32_t first_interrupts_domain;
  uint32_t last_interrupts_domain;
  uint8_t is_debug;
  uint32_t descs_programed;        // out
  int32_t launch_transfer_status;  // out
};

struct MemoryTransferParams {  // HAILO_MEMORY_TRANSFER, drivers ≤ 4.22 only
  uint32_t transfer_direction;   // 0 read, 1 write
  uint32_t memory_type;
  uint64_t address;
  uint64_t count;
  uint8_t buffer[kMaxMemoryTransferLength];
};

}  // namespace v4_18

}  // namespace abi

#pragma pack(pop)

// ---- ioctl numbers ------------------------------------------------------------------------------------------------

// The requests of one layout. 0 marks an ioctl the layout does not have.
struct IoctlNumbers {
  uint32_t memory_transfer;
  uint32_t query_device_properties;
  uint32_t query_driver_info;
  uint32_t vdma_enable_channels;
  uint32_t vdma_disable_channels;
  uint32_t vdma_interrupts_wait;
  uint32_t vdma_interrupts_read_timestamps;
  uint32_t vdma_buffer_map;
  uint32_t vdma_buffer_unmap;
  uint32_t vdma_buffer_sync;
  uint32_t desc_list_create;
  uint32_t desc_list_release;
  uint32_t desc_list_program;
  uint32_t vdma_low_memory_buffer_alloc;
  uint32_t vdma_low_memory_buffer_free;
  uint32_t mark_as_in_use;
  uint32_t vdma_continuous_buffer_alloc;
  uint32_t vdma_continuous_buffer_free;
  uint32_t vdma_launch_transfer;
  uint32_t fw_control;
  uint32_t read_notification;
  uint32_t disable_notification;
  uint32_t read_log;
  uint32_t reset_nn_core;
};

namespace detail {
template <typename DescProgram, typename IrqWait, typename Launch>
constexpr IoctlNumbers numbers(bool with_memory_transfer, bool launch_is_iowr) {
  return IoctlNumbers{
      with_memory_transfer ? ioc::iowr(kGeneralMagic, 0, sizeof(abi::v4_18::MemoryTransferParams)) : 0,
      ioc::iow(kGeneralMagic, 1, sizeof(DeviceProperties)),
      ioc::iow(kGeneralMagic, 2, sizeof(DriverInfo)),
      ioc::ior(kVdmaMagic, 0, sizeof(VdmaEnableChannelsParams)),
      ioc::ior(kVdmaMagic, 1, sizeof(VdmaDisableChannelsParams)),
      ioc::iowr(kVdmaMagic, 2, sizeof(IrqWait)),
      ioc::iowr(kVdmaMagic, 3, sizeof(VdmaInterruptsReadTimestampParams)),
      ioc::iowr(kVdmaMagic, 4, sizeof(VdmaBufferMapParams)),
      ioc::ior(kVdmaMagic, 5, sizeof(VdmaBufferUnmapParams)),
      ioc::ior(kVdmaMagic, 6, sizeof(VdmaBufferSyncParams)),
      ioc::iowr(kVdmaMagic, 7, sizeof(DescListCreateParams)),
      ioc::ior(kVdmaMagic, 8, sizeof(DescListReleaseParams)),
      ioc::ior(kVdmaMagic, 9, sizeof(DescProgram)),
      ioc::iowr(kVdmaMagic, 10, sizeof(AllocateLowMemoryBufferParams)),
      ioc::ior(kVdmaMagic, 11, sizeof(FreeLowMemoryBufferParams)),
      ioc::iow(kVdmaMagic, 12, sizeof(MarkAsInUseParams)),
      ioc::iowr(kVdmaMagic, 13, sizeof(AllocateContinuousBufferParams)),
      ioc::ior(kVdmaMagic, 14, sizeof(FreeContinuousBufferParams)),
      launch_is_iowr ? ioc::iowr(kVdmaMagic, 15, sizeof(Launch)) : ioc::ior(kVdmaMagic, 15, sizeof(Launch)),
      ioc::iowr(kNncMagic, 0, sizeof(FwControl)),
      ioc::iow(kNncMagic, 1, sizeof(D2hNotification)),
      ioc::io(kNncMagic, 2),
      ioc::iowr(kNncMagic, 3, sizeof(ReadLogParams)),
      ioc::io(kNncMagic, 4),
  };
}
}  // namespace detail

// 4.23.0 (no MEMORY_TRANSFER). 4.21/4.22 are the same plus memory_transfer = kIoctlsV4_18.memory_transfer.
inline constexpr IoctlNumbers kIoctlsCurrent =
    detail::numbers<abi::current::DescListProgramParams, abi::current::VdmaInterruptsWaitParams,
                    abi::current::VdmaLaunchTransferParams>(false, false);
inline constexpr IoctlNumbers kIoctlsV4_18 =
    detail::numbers<abi::v4_18::DescListProgramParams, abi::v4_18::VdmaInterruptsWaitParams,
                    abi::v4_18::VdmaLaunchTransferParams>(true, true);

// ---- compile-time checks against the facts ------------------------------------------------------------------------

#define AISRV_HAILO_OFFSET(type, field, value) static_assert(offsetof(type, field) == (value), #type "." #field)

static_assert(sizeof(DeviceProperties) == 23);
AISRV_HAILO_OFFSET(DeviceProperties, desc_max_page_size, 0);
AISRV_HAILO_OFFSET(DeviceProperties, board_type, 2);
AISRV_HAILO_OFFSET(DeviceProperties, allocation_mode, 6);
AISRV_HAILO_OFFSET(DeviceProperties, dma_type, 10);
AISRV_HAILO_OFFSET(DeviceProperties, dma_engines_count, 14);
AISRV_HAILO_OFFSET(DeviceProperties, is_fw_loaded, 22);

static_assert(sizeof(DriverInfo) == 12);
AISRV_HAILO_OFFSET(DriverInfo, major_version, 0);
AISRV_HAILO_OFFSET(DriverInfo, minor_version, 4);
AISRV_HAILO_OFFSET(DriverInfo, revision_version, 8);

static_assert(sizeof(VdmaEnableChannelsParams) == 13);
AISRV_HAILO_OFFSET(VdmaEnableChannelsParams, enable_timestamps_measure, 12);
static_assert(sizeof(VdmaDisableChannelsParams) == 12);

static_assert(sizeof(ChannelInterruptTimestamp) == 10);
static_assert(sizeof(VdmaInterruptsReadTimestampParams) == 2566);
AISRV_HAILO_OFFSET(VdmaInterruptsReadTimestampParams, timestamps_count, 2);
AISRV_HAILO_OFFSET(VdmaInterruptsReadTimestampParams, timestamps, 6);

static_assert(sizeof(VdmaBufferMapParams) == 40);
AISRV_HAILO_OFFSET(VdmaBufferMapParams, user_address, 0);
AISRV_HAILO_OFFSET(VdmaBufferMapParams, size, 8);
AISRV_HAILO_OFFSET(VdmaBufferMapParams, data_direction, 16);
AISRV_HAILO_OFFSET(VdmaBufferMapParams, buffer_type, 20);
AISRV_HAILO_OFFSET(VdmaBufferMapParams, allocated_buffer_handle, 24);
AISRV_HAILO_OFFSET(VdmaBufferMapParams, mapped_handle, 32);
static_assert(sizeof(VdmaBufferUnmapParams) == 8);

static_assert(sizeof(VdmaBufferSyncParams) == 28);
AISRV_HAILO_OFFSET(VdmaBufferSyncParams, handle, 0);
AISRV_HAILO_OFFSET(VdmaBufferSyncParams, sync_type, 8);
AISRV_HAILO_OFFSET(VdmaBufferSyncParams, offset, 12);
AISRV_HAILO_OFFSET(VdmaBufferSyncParams, count, 20);

static_assert(sizeof(DescListCreateParams) == 27);
AISRV_HAILO_OFFSET(DescListCreateParams, desc_count, 0);
AISRV_HAILO_OFFSET(DescListCreateParams, desc_page_size, 8);
AISRV_HAILO_OFFSET(DescListCreateParams, is_circular, 10);
AISRV_HAILO_OFFSET(DescListCreateParams, desc_handle, 11);
AISRV_HAILO_OFFSET(DescListCreateParams, dma_address, 19);
static_assert(sizeof(DescListReleaseParams) == 8);

static_assert(sizeof(AllocateLowMemoryBufferParams) == 16);
static_assert(sizeof(FreeLowMemoryBufferParams) == 8);
static_assert(sizeof(MarkAsInUseParams) == 1);
static_assert(sizeof(AllocateContinuousBufferParams) == 24);
AISRV_HAILO_OFFSET(AllocateContinuousBufferParams, dma_address, 16);
static_assert(sizeof(FreeContinuousBufferParams) == 8);

static_assert(sizeof(FwControl) == 1528);
AISRV_HAILO_OFFSET(FwControl, expected_md5, 0);
AISRV_HAILO_OFFSET(FwControl, buffer_len, 16);
AISRV_HAILO_OFFSET(FwControl, buffer, 20);
AISRV_HAILO_OFFSET(FwControl, timeout_ms, 1520);
AISRV_HAILO_OFFSET(FwControl, cpu_id, 1524);

static_assert(sizeof(D2hNotification) == 1508);
AISRV_HAILO_OFFSET(D2hNotification, buffer, 8);

static_assert(sizeof(ReadLogParams) == 532);
AISRV_HAILO_OFFSET(ReadLogParams, buffer, 4);
AISRV_HAILO_OFFSET(ReadLogParams, buffer_size, 516);
AISRV_HAILO_OFFSET(ReadLogParams, read_bytes, 524);

// 4.21 – 4.23 layouts
static_assert(sizeof(abi::current::DescListProgramParams) == 51);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, buffer_handle, 0);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, buffer_size, 8);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, buffer_offset, 16);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, batch_size, 24);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, desc_handle, 28);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, channel_index, 36);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, starting_desc, 37);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, should_bind, 41);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, last_interrupts_domain, 42);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, is_debug, 46);
AISRV_HAILO_OFFSET(abi::current::DescListProgramParams, stride, 47);

static_assert(sizeof(abi::current::VdmaInterruptsChannelData) == 3);
static_assert(sizeof(abi::current::VdmaInterruptsWaitParams) == 301);
AISRV_HAILO_OFFSET(abi::current::VdmaInterruptsWaitParams, channels_count, 12);
AISRV_HAILO_OFFSET(abi::current::VdmaInterruptsWaitParams, irq_data, 13);

static_assert(sizeof(abi::current::VdmaTransferBuffer) == 16);
AISRV_HAILO_OFFSET(abi::current::VdmaTransferBuffer, addr_or_fd, 4);
AISRV_HAILO_OFFSET(abi::current::VdmaTransferBuffer, size, 12);
static_assert(sizeof(abi::current::VdmaLaunchTransferParams) == 153);
AISRV_HAILO_OFFSET(abi::current::VdmaLaunchTransferParams, engine_index, 0);
AISRV_HAILO_OFFSET(abi::current::VdmaLaunchTransferParams, channel_index, 1);
AISRV_HAILO_OFFSET(abi::current::VdmaLaunchTransferParams, desc_handle, 2);
AISRV_HAILO_OFFSET(abi::current::VdmaLaunchTransferParams, starting_desc, 10);
AISRV_HAILO_OFFSET(abi::current::VdmaLaunchTransferParams, should_bind, 14);
AISRV_HAILO_OFFSET(abi::current::VdmaLaunchTransferParams, buffers_count, 15);
AISRV_HAILO_OFFSET(abi::current::VdmaLaunchTransferParams, buffers, 16);
AISRV_HAILO_OFFSET(abi::current::VdmaLaunchTransferParams, first_interrupts_domain, 144);
AISRV_HAILO_OFFSET(abi::current::VdmaLaunchTransferParams, last_interrupts_domain, 148);
AISRV_HAILO_OFFSET(abi::current::VdmaLaunchTransferParams, is_debug, 152);

// 4.18 – 4.20 layouts
static_assert(sizeof(abi::v4_18::DescListProgramParams) == 43);
AISRV_HAILO_OFFSET(abi::v4_18::DescListProgramParams, desc_handle, 24);
AISRV_HAILO_OFFSET(abi::v4_18::DescListProgramParams, channel_index, 32);
AISRV_HAILO_OFFSET(abi::v4_18::DescListProgramParams, starting_desc, 33);
AISRV_HAILO_OFFSET(abi::v4_18::DescListProgramParams, should_bind, 37);
AISRV_HAILO_OFFSET(abi::v4_18::DescListProgramParams, last_interrupts_domain, 38);
AISRV_HAILO_OFFSET(abi::v4_18::DescListProgramParams, is_debug, 42);

static_assert(sizeof(abi::v4_18::VdmaInterruptsChannelData) == 7);
static_assert(sizeof(abi::v4_18::VdmaInterruptsWaitParams) == 685);
AISRV_HAILO_OFFSET(abi::v4_18::VdmaInterruptsWaitParams, irq_data, 13);

static_assert(sizeof(abi::v4_18::VdmaTransferBuffer) == 16);
AISRV_HAILO_OFFSET(abi::v4_18::VdmaTransferBuffer, offset, 8);
AISRV_HAILO_OFFSET(abi::v4_18::VdmaTransferBuffer, size, 12);
static_assert(sizeof(abi::v4_18::VdmaLaunchTransferParams) == 65);
AISRV_HAILO_OFFSET(abi::v4_18::VdmaLaunchTransferParams, buffers, 16);
AISRV_HAILO_OFFSET(abi::v4_18::VdmaLaunchTransferParams, first_interrupts_domain, 48);
AISRV_HAILO_OFFSET(abi::v4_18::VdmaLaunchTransferParams, last_interrupts_domain, 52);
AISRV_HAILO_OFFSET(abi::v4_18::VdmaLaunchTransferParams, is_debug, 56);
AISRV_HAILO_OFFSET(abi::v4_18::VdmaLaunchTransferParams, descs_programed, 57);
AISRV_HAILO_OFFSET(abi::v4_18::VdmaLaunchTransferParams, launch_transfer_status, 61);

static_assert(sizeof(abi::v4_18::MemoryTransferParams) == 4120);
AISRV_HAILO_OFFSET(abi::v4_18::MemoryTransferParams, address, 8);
AISRV_HAILO_OFFSET(abi::v4_18::MemoryTransferParams, count, 16);
AISRV_HAILO_OFFSET(abi::v4_18::MemoryTransferParams, buffer, 24);

#undef AISRV_HAILO_OFFSET

// ioctl numbers, 4.23 (facts §2.3 table)
static_assert(kIoctlsCurrent.memory_transfer == 0);
static_assert(kIoctlsCurrent.query_device_properties == 0x40176701);
static_assert(kIoctlsCurrent.query_driver_info == 0x400c6702);
static_assert(kIoctlsCurrent.vdma_enable_channels == 0x800d7600);
static_assert(kIoctlsCurrent.vdma_disable_channels == 0x800c7601);
static_assert(kIoctlsCurrent.vdma_interrupts_wait == 0xc12d7602);
static_assert(kIoctlsCurrent.vdma_interrupts_read_timestamps == 0xca067603);
static_assert(kIoctlsCurrent.vdma_buffer_map == 0xc0287604);
static_assert(kIoctlsCurrent.vdma_buffer_unmap == 0x80087605);
static_assert(kIoctlsCurrent.vdma_buffer_sync == 0x801c7606);
static_assert(kIoctlsCurrent.desc_list_create == 0xc01b7607);
static_assert(kIoctlsCurrent.desc_list_release == 0x80087608);
static_assert(kIoctlsCurrent.desc_list_program == 0x80337609);
static_assert(kIoctlsCurrent.vdma_low_memory_buffer_alloc == 0xc010760a);
static_assert(kIoctlsCurrent.vdma_low_memory_buffer_free == 0x8008760b);
static_assert(kIoctlsCurrent.mark_as_in_use == 0x4001760c);
static_assert(kIoctlsCurrent.vdma_continuous_buffer_alloc == 0xc018760d);
static_assert(kIoctlsCurrent.vdma_continuous_buffer_free == 0x8008760e);
static_assert(kIoctlsCurrent.vdma_launch_transfer == 0x8099760f);
static_assert(kIoctlsCurrent.fw_control == 0xc5f86e00);
static_assert(kIoctlsCurrent.read_notification == 0x45e46e01);
static_assert(kIoctlsCurrent.disable_notification == 0x00006e02);
static_assert(kIoctlsCurrent.read_log == 0xc2146e03);
static_assert(kIoctlsCurrent.reset_nn_core == 0x00006e04);
// 4.18 – 4.20: the three changed structs, LAUNCH_TRANSFER still _IOWR, MEMORY_TRANSFER present (facts: 0xd0186700)
static_assert(kIoctlsV4_18.memory_transfer == 0xd0186700);
static_assert(kIoctlsV4_18.vdma_interrupts_wait == 0xc2ad7602);
static_assert(kIoctlsV4_18.desc_list_program == 0x802b7609);
static_assert(kIoctlsV4_18.vdma_launch_transfer == 0xc041760f);
static_assert(kIoctlsV4_18.fw_control == kIoctlsCurrent.fw_control);
static_assert(kIoctlsV4_18.query_driver_info == kIoctlsCurrent.query_driver_info);
static_assert(kIoctlsV4_18.query_device_properties == kIoctlsCurrent.query_device_properties);

}  // namespace aisrv::engine::hailo8::driver
