#include "rules/registry.hpp"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

namespace ddplint::rules {

extern const std::pair<std::string_view, std::string_view> kRuleDocs[];
extern const std::size_t kRuleDocCount;

extern const Rule kSyntaxError;
extern const Rule kDataloaderWithoutWorkers;
extern const Rule kDataloaderWithoutPinMemory;
extern const Rule kDdpWithoutDeviceIds;
extern const Rule kManualGradientAllreduce;
extern const Rule kCollectiveInTrainingLoop;
extern const Rule kItemInTrainingLoop;
extern const Rule kBatchSizeNotScaled;
extern const Rule kDataParallelRule;
extern const Rule kLegacyLauncher;
extern const Rule kFindUnusedParameters;
extern const Rule kNcclTransportDisabled;
extern const Rule kGlooBackendForCuda;
extern const Rule kNcclDebugLeftOn;
extern const Rule kDeprecatedCudaAmp;
extern const Rule kDeterministicKernels;
extern const Rule kHostTransferInTrainingLoop;
extern const Rule kExplicitSyncInTrainingLoop;
extern const Rule kSamplerWithShuffle;
extern const Rule kLoadWithoutMapLocation;
extern const Rule kTinyPerGpuBatch;
extern const Rule kFp16WithoutGradScaler;
extern const Rule kGradScalerWithBf16;
extern const Rule kNoMixedPrecision;
extern const Rule kAllRanksOnDefaultGpu;
extern const Rule kCheckpointOnEveryRank;
extern const Rule kDdpModuleForward;
extern const Rule kCollectiveUnderRankGuard;
extern const Rule kSamplerSetEpochMissing;
extern const Rule kPinnedCopyBlocking;
extern const Rule kGlobalRankAsDevice;
extern const Rule kAccumulationWithoutNoSync;
extern const Rule kDdpBeforeDeviceMove;
extern const Rule kSyncbnAfterDdp;
extern const Rule kDdpForwardOnOneRank;
extern const Rule kNoSyncWithoutForward;
extern const Rule kLearningRateNotScaled;
extern const Rule kEvalSamplerPads;
extern const Rule kDataloaderWorkersNotPersistent;
extern const Rule kDistributedWithoutSampler;
extern const Rule kTensorPrintInTrainingLoop;
extern const Rule kTensorTruthinessInTrainingLoop;

namespace {
std::vector<Rule> build() {
  std::vector<Rule> rules = {
      kSyntaxError,
      kDataloaderWithoutWorkers,
      kDataloaderWithoutPinMemory,
      kDdpWithoutDeviceIds,
      kManualGradientAllreduce,
      kCollectiveInTrainingLoop,
      kItemInTrainingLoop,
      kBatchSizeNotScaled,
      kDataParallelRule,
      kLegacyLauncher,
      kFindUnusedParameters,
      kNcclTransportDisabled,
      kGlooBackendForCuda,
      kNcclDebugLeftOn,
      kDeprecatedCudaAmp,
      kDeterministicKernels,
      kHostTransferInTrainingLoop,
      kExplicitSyncInTrainingLoop,
      kSamplerWithShuffle,
      kLoadWithoutMapLocation,
      kTinyPerGpuBatch,
      kFp16WithoutGradScaler,
      kGradScalerWithBf16,
      kNoMixedPrecision,
      kAllRanksOnDefaultGpu,
      kCheckpointOnEveryRank,
      kDdpModuleForward,
      kCollectiveUnderRankGuard,
      kSamplerSetEpochMissing,
      kPinnedCopyBlocking,
      kGlobalRankAsDevice,
      kAccumulationWithoutNoSync,
      kDdpBeforeDeviceMove,
      kSyncbnAfterDdp,
      kDdpForwardOnOneRank,
      kNoSyncWithoutForward,
      kLearningRateNotScaled,
      kEvalSamplerPads,
      kDataloaderWorkersNotPersistent,
      kDistributedWithoutSampler,
      kTensorPrintInTrainingLoop,
      kTensorTruthinessInTrainingLoop,
  };
  for (Rule& r : rules) {
    for (std::size_t i = 0; i < kRuleDocCount; ++i)
      if (kRuleDocs[i].first == r.info.code) r.info.docs = kRuleDocs[i].second;
  }
  std::sort(rules.begin(), rules.end(), [](const Rule& a, const Rule& b) { return a.info.code < b.info.code; });
  return rules;
}
}  // namespace

std::span<const Rule> all() {
  static const std::vector<Rule> rules = build();
  return rules;
}

const Rule* find(std::string_view code) {
  for (const Rule& r : all())
    if (r.info.code == code) return &r;
  return nullptr;
}

}  // namespace ddplint::rules
